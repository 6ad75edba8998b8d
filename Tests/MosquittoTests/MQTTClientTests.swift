import Mosquitto
import MosquittoTestSupport
import Testing

/// Against a real mosquitto per test. `.serialized` keeps the 2-core machine from running several
/// brokers and their clients at once, which would make deadlines flaky. The time limit (per test)
/// only turns a hang into a failure instead of stalling CI.
@Suite("MQTT client against a real broker", .serialized, .timeLimit(.minutes(3)))
struct MQTTClientTests {
    @Test("connects, subscribes, and receives retained and live messages")
    func publishAndReceive() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (publisher, publisherEvents) = try clients.start(broker.clientConfiguration(clientID: "publisher"))
                let sessionPresent = try await publisherEvents.connected()
                #expect(sessionPresent == false)
                #expect(publisher.isConnected)
                #expect(publisher.protocolVersion == .v5)

                // Its own copy coming back means the broker has stored the retained message; a
                // subscriber arriving earlier would get it live, with the retain flag off.
                try publisher.subscribe("home/state", qos: 1)
                try publisher.publish(MQTTMessage(topic: "home/state", string: "{\"on\":true}", retain: true))
                _ = try await publisherEvents.message(on: "home/state")

                let (_, subscriberEvents) = try clients.start(broker.clientConfiguration(clientID: "subscriber"), subscribing: ["home/#"])
                try await subscriberEvents.connected()

                let retained = try await subscriberEvents.message(on: "home/state")
                #expect(retained.payloadString == "{\"on\":true}")
                #expect(retained.retain)
                #expect(retained.qos == 1)

                try publisher.publish(MQTTMessage(topic: "home/event", string: "pressed", qos: 1))
                let live = try await subscriberEvents.message(on: "home/event")
                #expect(live == MQTTMessage(topic: "home/event", string: "pressed", qos: 1, retain: false))
            }
        }
    }

    @Test("No Local: the client's own publications stay away, retained ones still come at subscription, others' arrive")
    func noLocalSubscription() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                // A retained message of this client id's earlier connection, as a node's documents
                // of its previous run are.
                let (earlier, earlierEvents) = try clients.start(broker.clientConfiguration(clientID: "node"))
                try earlier.subscribe("node/alarms/#", qos: 1)
                try earlier.publish(MQTTMessage(topic: "node/alarms/old", string: "before", qos: 1, retain: true))
                _ = try await earlierEvents.message(on: "node/alarms/old")
                await earlier.disconnect()

                let (node, events) = try clients.start(broker.clientConfiguration(clientID: "node"), subscribing: ["node/alarms/#"], noLocal: true)
                try await events.connected()
                #expect(try await events.message(on: "node/alarms/#").payloadString == "before", "retained at subscription")

                let (other, otherEvents) = try clients.start(broker.clientConfiguration(clientID: "other"), subscribing: ["node/alarms/own"])
                try await otherEvents.connected()
                try node.publish(MQTTMessage(topic: "node/alarms/own", string: "mine", qos: 1, retain: true))
                // Once the broker has passed the node's message on, the other's follows it: had the
                // node's own come back to it, it would be here first.
                _ = try await otherEvents.message(on: "node/alarms/own")
                try other.publish(MQTTMessage(topic: "node/alarms/theirs", string: "theirs", qos: 1))
                let next = try await events.message(on: "node/alarms/#")
                #expect(next.topic == "node/alarms/theirs")
                #expect(next.payloadString == "theirs")
            }
        }
    }

    @Test("publishing several messages at once sends them in order and reports only the invalid ones")
    func publishTogether() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "batch"), subscribing: ["batch/#"])
                try await events.connected()
                let valid = (0..<50).map { MQTTMessage(topic: "batch/\($0 % 3)", string: "\($0)", qos: 1) }
                let invalid = MQTTMessage(topic: "batch/+", string: "wildcard")
                let failures = client.publish(Array(valid[..<25]) + [invalid] + Array(valid[25...]))
                #expect(failures.map(\.message) == [invalid])
                #expect(failures.first?.error.code == .invalidArgument)
                let received = try await events.messages(on: "batch/#") { $0.payloadString == "49" }
                #expect(received.map(\.payloadString) == valid.map(\.payloadString))
            }
        }
    }

    @Test("every publish wakes the network thread: with a 60 s keepalive nothing waits for the next round")
    func publishesLeaveWithoutWaitingForKeepalive() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                // A lost wake-up would leave a message queued until the network thread's next
                // round, when the next keepalive ping is due (up to 60 s later): past the usual 10 s
                // deadline of every wait here, which a working client meets with a wide margin.
                let (publisher, publisherEvents) = try clients.start(broker.clientConfiguration(clientID: "waker", keepAlive: 60))
                let (_, subscriberEvents) = try clients.start(broker.clientConfiguration(clientID: "watcher", keepAlive: 60), subscribing: ["wake/#"])
                try await subscriberEvents.connected()
                try await publisherEvents.connected()
                for round in 0..<40 {
                    // From another task each time, alone or as a batch, QoS 0 and 1.
                    let batch = round % 2 == 1
                    try await Task.detached {
                        if batch {
                            #expect(publisher.publish([MQTTMessage(topic: "wake/a", string: "\(round)"), MQTTMessage(topic: "wake/b", string: "\(round)", qos: 1)]).isEmpty)
                        } else {
                            try publisher.publish(MQTTMessage(topic: "wake/a", string: "\(round)", qos: round % 4 == 0 ? 0 : 1))
                        }
                    }.value
                    let received = try await subscriberEvents.message(on: "wake/#")
                    #expect(received.payloadString == "\(round)")
                    if batch { _ = try await subscriberEvents.message(on: "wake/b") }
                }
            }
        }
    }

    @Test("MQTT 5 request/response carries response topic and correlation data both ways")
    func requestResponse() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (responder, responderEvents) = try clients.start(broker.clientConfiguration(clientID: "responder"), subscribing: ["alarmd/node/cmd/+"])
                try await responderEvents.connected()
                let (requester, requesterEvents) = try clients.start(broker.clientConfiguration(clientID: "requester"), subscribing: ["replies/requester"])
                try await requesterEvents.connected()

                let correlation: [UInt8] = [0x00, 0xFF, 0x10, 0x42]
                try requester.publish(MQTTMessage(
                    topic: "alarmd/node/cmd/list", string: "{}", qos: 1,
                    responseTopic: "replies/requester", correlationData: correlation
                ))

                let request = try await responderEvents.message(on: "alarmd/node/cmd/list")
                #expect(request.responseTopic == "replies/requester")
                #expect(request.correlationData == correlation)

                let replyTopic = try #require(request.responseTopic)
                try responder.publish(MQTTMessage(
                    topic: replyTopic, string: "{\"ok\":true,\"alarms\":[]}", qos: 1,
                    correlationData: request.correlationData
                ))
                let reply = try await requesterEvents.message(on: "replies/requester")
                #expect(reply.payloadString == "{\"ok\":true,\"alarms\":[]}")
                #expect(reply.correlationData == correlation)
                #expect(reply.responseTopic == nil)
            }
        }
    }

    @Test("an MQTT 3.1.1 client publishes without v5 properties and receives none")
    func forcedMQTT311() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (observer, observerEvents) = try clients.start(broker.clientConfiguration(clientID: "observer-v5"), subscribing: ["v311/#"])
                try await observerEvents.connected()
                let (legacy, legacyEvents) = try clients.start(broker.clientConfiguration(clientID: "legacy", protocolSetting: .v311), subscribing: ["v311/#"])
                try await legacyEvents.connected()
                #expect(legacy.protocolVersion == .v311)

                try legacy.publish(MQTTMessage(topic: "v311/request", string: "ping", responseTopic: "v311/reply", correlationData: [1]))
                let seenByV5 = try await observerEvents.message(on: "v311/request")
                #expect(seenByV5.payloadString == "ping")
                #expect(seenByV5.responseTopic == nil)
                #expect(seenByV5.correlationData == nil)

                try observer.publish(MQTTMessage(topic: "v311/reply", string: "pong", responseTopic: "v311/x", correlationData: [2]))
                _ = try await legacyEvents.message(on: "v311/request")  // its own message comes first
                let seenBy311 = try await legacyEvents.message(on: "v311/reply")
                #expect(seenBy311.payloadString == "pong")
                #expect(seenBy311.responseTopic == nil)
                #expect(seenBy311.correlationData == nil)
            }
        }
    }

    @Test("a broker that refuses MQTT 5 makes the client fall back to MQTT 3.1.1 by itself")
    func automaticFallback() async throws {
        try await TestBroker.withBroker { broker in
            let onlyMQTT311 = try TCPProxy(upstreamPort: broker.port, rejectingMQTT5: true)
            defer { onlyMQTT311.close() }
            try await withTestClients { clients in
                let (_, observerEvents) = try clients.start(broker.clientConfiguration(clientID: "observer"), subscribing: ["fallback/#"])
                try await observerEvents.connected()

                // It asks for MQTT 5 first (the default); by the time it is connected it has fallen back.
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "fallback", port: onlyMQTT311.port))
                try await events.connected()
                #expect(client.protocolVersion == .v311)

                try client.publish(MQTTMessage(topic: "fallback/reply", string: "ok", correlationData: [9]))
                let received = try await observerEvents.message(on: "fallback/reply")
                #expect(received.payloadString == "ok")
                #expect(received.correlationData == nil)
            }
        }
    }

    @Test("a broker that drops the MQTT 5 CONNECT unanswered gets MQTT 3.1.1; pinned to 5, the client keeps trying 5")
    func fallbackAfterDrop() async throws {
        try await TestBroker.withBroker { broker in
            let dropsMQTT5 = try TCPProxy(upstreamPort: broker.port, droppingMQTT5: true)
            defer { dropsMQTT5.close() }
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "dropped", port: dropsMQTT5.port))
                try await events.connected()
                #expect(client.protocolVersion == .v311)

                let (pinned, pinnedEvents) = try clients.start(broker.clientConfiguration(clientID: "pinned", port: dropsMQTT5.port, protocolSetting: .v5))
                await #expect(throws: TestSupportError.self, "pinned to MQTT 5, it must not connect through a broker that drops MQTT 5") {
                    try await pinnedEvents.connected(within: .milliseconds(600))
                }
                #expect(pinned.protocolVersion == .v5)
            }
        }
    }

    /// A proxy in front of a broker that is down (docker-proxy while mosquitto's container restarts)
    /// accepts each connection and closes it: every MQTT 5 attempt looks dropped, and the fallback
    /// to 3.1.1 follows at every attempt until a broker answers. Before, each one was a notice: a
    /// line a second in the journal for as long as the broker was down.
    @Test("a broker down behind a proxy that accepts and closes: the fallback to MQTT 3.1.1 is a notice once, not at every attempt")
    func fallbackNoticedOnce() async throws {
        try await TestBroker.withBroker { broker in
            let proxy = try TCPProxy(upstreamPort: broker.port)
            defer { proxy.close() }
            proxy.acceptsConnections = false
            try await withTestClients { clients in
                let recorder = LogRecorder()
                let client = try MQTTClient(configuration: broker.clientConfiguration(clientID: "behind-proxy", port: proxy.port),
                                            logger: recorder.logger(at: .debug))
                clients.adopt(client)
                try client.connect()
                let fallbacks = { recorder.entries.filter { $0.message.contains("dropped the MQTT 5 CONNECT") } }
                let deadline = ContinuousClock.now + .seconds(10)
                while fallbacks().count < 4 {
                    guard ContinuousClock.now < deadline else { throw TestSupportError("fewer than 4 fallbacks within 10 s") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(fallbacks().filter { $0.level >= .notice }.count == 1)
            }
        }
    }

    /// A broker's `message_size_limit` refuses a larger QoS 1 publish in its MQTT 5 PUBACK: before,
    /// the warning named the reason only, leaving the operator to guess which message it was.
    @Test("a publish the broker refuses is logged with its topic and the broker's reason")
    func refusedPublishNamesItsTopic() async throws {
        try await TestBroker.withBroker(settings: "message_size_limit 100") { broker in
            try await withTestClients { clients in
                let recorder = LogRecorder()
                let client = try MQTTClient(configuration: broker.clientConfiguration(clientID: "sender"), logger: recorder.logger(at: .warning))
                clients.adopt(client)
                let events = EventRecorder(client)
                try client.connect()
                try await events.connected()
                try client.publish(MQTTMessage(topic: "alarmd/node/alarms/big", payload: Array(repeating: 0x61, count: 200), qos: 1))
                let deadline = ContinuousClock.now + .seconds(10)
                while !recorder.entries.contains(where: { $0.message == "MQTT broker rejected a publish" }) {
                    guard ContinuousClock.now < deadline else { throw TestSupportError("no refusal logged within 10 s") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                let refusal = try #require(recorder.entries.first { $0.message == "MQTT broker rejected a publish" })
                #expect(refusal.metadata["mqtt.topic"] == "alarmd/node/alarms/big")
                #expect(refusal.metadata["mqtt.reason"].map { "\($0)".isEmpty } == false)
            }
        }
    }

    @Test("the will is published when the connection ends uncleanly, and not after a clean disconnect")
    func willMessage() async throws {
        try await TestBroker.withBroker { broker in
            let link = try TCPProxy(upstreamPort: broker.port)
            defer { link.close() }
            try await withTestClients { clients in
                let (observer, observerEvents) = try clients.start(broker.clientConfiguration(clientID: "observer"), subscribing: ["alarmd/node/status"])
                try await observerEvents.connected()

                let will = MQTTConfiguration.Will(topic: "alarmd/node/status", payload: Array("{\"state\":\"offline\"}".utf8))
                let (node, nodeEvents) = try clients.start(broker.clientConfiguration(clientID: "node", port: link.port, will: will))
                try await nodeEvents.connected()
                try node.publish(MQTTMessage(topic: "alarmd/node/status", string: "{\"state\":\"online\"}", retain: true))
                #expect(try await observerEvents.message(on: "alarmd/node/status").payloadString == "{\"state\":\"online\"}")

                // The broker sees the TCP connection end with no DISCONNECT, as when the process dies.
                link.cutConnections()
                let willMessage = try await observerEvents.message(on: "alarmd/node/status")
                #expect(willMessage.payloadString == "{\"state\":\"offline\"}")

                // The node notices and reconnects by itself.
                try await nodeEvents.disconnected()
                try await nodeEvents.connected()

                // A clean shutdown: the node's own offline status, acknowledged before DISCONNECT; no will.
                // (If the cut beat the PUBACK of "online", libmosquitto re-sends it after reconnecting:
                // QoS 1 is at least once.)
                let cleanOffline = "{\"state\":\"offline\",\"clean\":true}"
                try node.publish(MQTTMessage(topic: "alarmd/node/status", string: cleanOffline, retain: true))
                await node.disconnect()
                let untilOffline = try await observerEvents.messages(on: "alarmd/node/status") { $0.payloadString == cleanOffline }
                #expect(untilOffline.dropLast().allSatisfy { $0.payloadString == "{\"state\":\"online\"}" })
                try observer.publish(MQTTMessage(topic: "alarmd/node/status", string: "sentinel", retain: false))
                #expect(try await observerEvents.message(on: "alarmd/node/status").payloadString == "sentinel")
            }
        }
    }

    @Test("after a broker restart the client reconnects, resubscribes, and reports .connected again")
    func brokerRestart() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (subscriber, events) = try clients.start(broker.clientConfiguration(clientID: "subscriber"), subscribing: ["restart/#"])
                try await events.connected()

                try await broker.restart()
                let reason = try await events.disconnected()
                #expect(!reason.isEmpty)
                try await events.connected()
                #expect(subscriber.isConnected)

                // The restarted broker knows nothing: only the automatic resubscription delivers this.
                let (publisher, publisherEvents) = try clients.start(broker.clientConfiguration(clientID: "publisher"))
                try await publisherEvents.connected()
                try publisher.publish(MQTTMessage(topic: "restart/after", string: "hello again"))
                #expect(try await events.message(on: "restart/#").payloadString == "hello again")
            }
        }
    }

    /// Two clients with one client id take the session from each other; each connection then
    /// ends soon after it starts. The wait before reconnecting must grow (here from 20 ms to
    /// 400 ms) rather than stay at the shortest, or the pair would reconnect about 50 times a
    /// second each, republishing everything every time.
    @Test("connections that end soon after they start make the reconnect wait grow")
    func sessionTakeoverBacksOff() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                var configuration = broker.clientConfiguration(clientID: "twin")
                configuration.maximumDelayAfterShortConnections = .milliseconds(400)
                let (_, first) = try clients.start(configuration)
                try await first.connected()
                let (_, second) = try clients.start(configuration)
                try await second.connected()
                // Over two seconds, the first client's connections are counted.
                let end = ContinuousClock.now + .seconds(2)
                var connections = 0
                while ContinuousClock.now < end {
                    guard (try? await first.connected(within: ContinuousClock.now.duration(to: end))) != nil else { break }
                    connections += 1
                }
                // Without backoff: dozens. With it: a few short waits, then one every 400 ms or more.
                #expect(connections >= 1)
                #expect(connections <= 12)
            }
        }
    }

    @Test("publishes while the broker is unreachable are buffered: latest retained per topic, bounded FIFO for the rest")
    func bufferingWhileUnreachable() async throws {
        try await TestBroker.withBroker { broker in
            let link = try TCPProxy(upstreamPort: broker.port)
            defer { link.close() }
            try await withTestClients { clients in
                let (_, observerEvents) = try clients.start(broker.clientConfiguration(clientID: "observer"), subscribing: ["buffer/#"])
                try await observerEvents.connected()

                let (node, nodeEvents) = try clients.start(broker.clientConfiguration(clientID: "node", port: link.port, outgoingBufferLimit: 3))
                try await nodeEvents.connected()

                link.acceptsConnections = false
                link.cutConnections()
                try await nodeEvents.disconnected()
                #expect(!node.isConnected)

                let publishes: [(topic: String, text: String, retain: Bool)] = [
                    ("buffer/state", "v1", true), ("buffer/event", "1", false),
                    ("buffer/state", "v2", true), ("buffer/event", "2", false),
                    ("buffer/event", "3", false), ("buffer/state", "v3", true),
                    ("buffer/event", "4", false), ("buffer/event", "5", false),
                ]
                for publish in publishes {
                    try node.publish(MQTTMessage(topic: publish.topic, string: publish.text, qos: 1, retain: publish.retain))
                }

                link.acceptsConnections = true
                try await nodeEvents.connected()
                try node.publish(MQTTMessage(topic: "buffer/end", string: "end"))

                let delivered = try await observerEvents.messages(on: "buffer/#") { $0.topic == "buffer/end" }
                #expect(delivered.map(\.payloadString) == ["3", "v3", "4", "5", "end"])

                let (lateObserver, lateEvents) = try clients.start(broker.clientConfiguration(clientID: "late-observer"))
                try lateObserver.subscribe("buffer/state", qos: 1)
                let retained = try await lateEvents.message(on: "buffer/state")
                #expect(retained.payloadString == "v3")
                #expect(retained.retain)
            }
        }
    }

    @Test("retained state published while the broker is down reaches the restarted broker, latest per topic")
    func retainedStateAcrossBrokerRestart() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (node, nodeEvents) = try clients.start(broker.clientConfiguration(clientID: "node"))
                try await nodeEvents.connected()

                try await broker.stop()
                try await nodeEvents.disconnected()
                try node.publish(MQTTMessage(topic: "alarms/a", string: "scheduled", retain: true))
                try node.publish(MQTTMessage(topic: "alarms/b", string: "countdown", retain: true))
                try node.publish(MQTTMessage(topic: "alarms/a", string: "alerting", retain: true))
                try await broker.start()
                try await nodeEvents.connected()

                // A fresh subscriber reads what the broker retained. One that subscribes while the
                // flushed messages are still on their way gets them live (retain flag off), so a
                // busy machine may need another look: up to five subscribers, each a new client.
                var retained: [String: String] = [:]
                for attempt in 0..<5 where retained.count < 2 {
                    let (_, observerEvents) = try clients.start(broker.clientConfiguration(clientID: "observer-\(attempt)"), subscribing: ["alarms/#"])
                    try await observerEvents.connected()
                    retained = [:]
                    for _ in 0..<2 {
                        guard let message = try? await observerEvents.message(on: "alarms/#", within: .seconds(2)), message.retain else { break }
                        retained[message.topic] = message.payloadString
                    }
                }
                #expect(retained == ["alarms/a": "alerting", "alarms/b": "countdown"])
            }
        }
    }

    @Test("connects over TLS, trusting the broker's certificate authority (mosquitto_tls_set)")
    func tls() async throws {
        try await TestBroker.withBroker(tls: true) { broker in
            try await withTestClients { clients in
                let configuration = broker.clientConfiguration(clientID: "tls")
                #expect(configuration.tls?.caFile != nil)
                let (client, events) = try clients.start(configuration, subscribing: ["secure/#"])
                try await events.connected()
                try client.publish(MQTTMessage(topic: "secure/echo", string: "over TLS", correlationData: [7]))
                let echo = try await events.message(on: "secure/#")
                #expect(echo.payloadString == "over TLS")
                #expect(echo.correlationData == [7])
            }
        }
    }

    /// With TLS the network thread waits in `mosquitto_loop`, which only a packet queued through
    /// libmosquitto wakes, so disconnect() cannot leave the DISCONNECT to that thread.
    @Test("over TLS, disconnect() of an idle client returns at once, not at its next keepalive ping")
    func tlsDisconnectIsPrompt() async throws {
        try await TestBroker.withBroker(tls: true) { broker in
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "tls-stop", keepAlive: 30))
                try await events.connected()
                let start = ContinuousClock.now
                await client.disconnect()
                #expect(ContinuousClock.now - start < .seconds(5))
            }
        }
    }

    @Test("a client started while the broker is down connects once it comes up")
    func brokerDownAtStart() async throws {
        try await TestBroker.withBroker(started: false) { broker in
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "early"))
                try client.publish(MQTTMessage(topic: "boot/status", string: "online", retain: true))
                #expect(!client.isConnected)

                try await broker.start()
                try await events.connected()
                try client.subscribe("boot/status", qos: 1)
                #expect(try await events.message(on: "boot/status").payloadString == "online")
            }
        }
    }

    /// The network thread sleeps until a PINGREQ is due rather than waking at a fixed rate: a ping
    /// sent too late makes the broker drop the client after 1.5 × keepalive (7.5 s here).
    @Test("an idle connection outlives several keepalives without being dropped or reconnecting")
    func idleConnectionStaysUp() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "idle", keepAlive: 5), subscribing: ["idle/#"])
                try await events.connected()
                // Counted, not timed: any disconnection in 2.5 keepalives of silence is a failure.
                let disconnection = try? await events.disconnected(within: .milliseconds(12_500))
                #expect(disconnection == nil)
                #expect(!broker.logText().contains("exceeded timeout"))
                #expect(client.isConnected)
                try client.publish(MQTTMessage(topic: "idle/after", string: "still here"))
                #expect(try await events.message(on: "idle/#").payloadString == "still here")
            }
        }
    }

    @Test("a frozen broker is noticed through keepalive, and the client recovers after it thaws")
    func frozenBroker() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, events) = try clients.start(broker.clientConfiguration(clientID: "patient", keepAlive: 5), subscribing: ["frozen/#"])
                try await events.connected()

                // The deadlines only bound a hang, with room for a loaded machine: with a 5 s keepalive
                // the client gives up on the frozen broker in about 10 s, and reconnects within seconds
                // of the thaw. What is checked is the order: disconnected by keepalive, then connected.
                broker.freeze()
                let reason = try await events.disconnected(within: .seconds(40))
                #expect(reason.contains("keepalive"))
                broker.thaw()
                try await events.connected(within: .seconds(30))

                try client.publish(MQTTMessage(topic: "frozen/after", string: "alive"))
                #expect(try await events.message(on: "frozen/#").payloadString == "alive")
            }
        }
    }
}
