import AlarmKit
import Foundation
import Mosquitto
import MosquittoTestSupport
import Synchronization
import Testing

/// AlarmKit's remote `AlarmManager` against a real alarmd.
@Suite("Remote AlarmManager", .serialized, .timeLimit(.minutes(3)))
struct RemoteManagerTests {
    struct CookingData: AlarmMetadata {
        enum Method: String, Codable { case frying, grilling }
        let method: Method
    }

    /// Runs `body` with a remote manager of `node` and its connection, and closes the connection
    /// (awaited) afterwards, also when `body` throws.
    private func withManager<Result>(
        for broker: TestBroker, node: String, _ body: (AlarmManager, RemoteNodeConnection) async throws -> Result
    ) async throws -> Result {
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: node))
        do {
            let result = try await body(AlarmManager(connection: connection), connection)
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }

    @Test("The cooking timer runs end to end: schedule, alert, Repeat, cancel")
    func cookingTimer() async throws {
        try await withDaemon { broker, daemon, _ in
            try await withManager(for: broker, node: daemon.node) { manager, _ in
                let attributes = AlarmAttributes(
                    presentation: AlarmPresentation(
                        alert: .init(title: "Food Ready!",
                                     secondaryButton: .init(text: "Repeat", textColor: .white, systemImageName: "repeat.circle"),
                                     secondaryButtonBehavior: .countdown),
                        countdown: .init(title: "Cooking"), paused: .init(title: "Paused", resumeButton: .init(text: "Resume", textColor: .green, systemImageName: "play"))),
                    metadata: CookingData(method: .frying), tintColor: .green)
                let id = UUID()
                // A short countdown, to alert soon; a long Repeat, so it cannot alert again before it is checked.
                let configuration = AlarmManager.AlarmConfiguration(
                    countdownDuration: .init(preAlert: 1, postAlert: 600), attributes: attributes)
                let alarm = try await manager.schedule(id: id, configuration: configuration)
                #expect(alarm.state == .countdown)
                _ = try await firstValue(of: manager.alarmUpdates, "update with the alarm alerting") {
                    $0.first(where: { $0.id == id })?.state == .alerting
                }
                try await manager.countdown(id: id)
                let documents = try await manager.fetchAlarmDocuments()
                #expect(documents.map(\.id) == [id])
                #expect(documents.first?.state == .countdown)
                #expect(documents.first?.configuration.attributes.metadata == .object(["method": .string("frying")]))
                try await manager.cancel(id: id)
                _ = try await firstValue(of: manager.alarmUpdates, "empty update after the cancel") { $0.isEmpty }
                await #expect(throws: AlarmNodeError.notFound(id)) { try await manager.stop(id: id) }
            }
        }
    }

    @Test("Two remote observers of alarmUpdates both see the change")
    func twoObservers() async throws {
        try await withDaemon { broker, daemon, _ in
            try await withManager(for: broker, node: daemon.node) { first, firstConnection in
                try await withManager(for: broker, node: daemon.node) { second, secondConnection in
                    async let seenByFirst = firstValue(of: first.alarmUpdates, "update with one alarm for the first observer") { $0.count == 1 }
                    async let seenBySecond = firstValue(of: second.alarmUpdates, "update with one alarm for the second observer") { $0.count == 1 }
                    firstConnection.start()
                    secondConnection.start()
                    let attributes = AlarmAttributes<RemoteManagerTests.CookingData>(
                        presentation: .init(alert: .init(title: "Tea")),
                        tintColor: .blue)
                    try await first.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes))
                    _ = try await (seenByFirst, seenBySecond)
                    #expect(try second.alarms.count == 1)
                    #expect(second.authorizationState == .authorized)
                }
            }
        }
    }

    @Test("An alarm removed while an observer was cut off leaves its list when it reconnects, and no list comes twice in a row")
    func removedWhileCutOff() async throws {
        try await withDaemon { broker, daemon, node in
            let link = try TCPProxy(upstreamPort: broker.port)
            defer { link.close() }
            let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: link.port, node: daemon.node))
            let manager = AlarmManager(connection: connection)
            let attributes = AlarmAttributes<CookingData>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
            let (keep, gone) = (UUID(), UUID())
            for id in [keep, gone] { try await manager.schedule(id: id, configuration: .timer(duration: 600, attributes: attributes)) }
            let lists = Mutex<[[UUID]]>([])
            let recorder = Task { for await alarms in manager.alarmUpdates { lists.withLock { $0.append(alarms.map(\.id)) } } }
            defer { recorder.cancel() }
            _ = try await firstValue(of: manager.alarmUpdates, "both alarms") { $0.count == 2 }
            link.acceptsConnections = false
            link.cutConnections()
            while connection.isConnectedToBroker { try await Task.sleep(for: .milliseconds(20)) }
            _ = try await node.request("cancel", ["id": .string(gone.uuidString)])
            link.acceptsConnections = true
            _ = try await firstValue(of: manager.alarmUpdates, "the list without the alarm cancelled meanwhile", within: .seconds(10)) {
                $0.map(\.id) == [keep]
            }
            let seen = lists.withLock { $0 }
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 != $1 }, "\(seen)")
            await connection.close()
        }
    }

    @Test("A status that counts alarms whose documents the broker does not replay: the list comes from the node, never empty")
    func documentsNotReplayed() async throws {
        try await withDaemon { broker, daemon, node in
            let ids = [UUID(), UUID()]
            for id in ids { _ = try await node.request("schedule", ["id": .string(id.uuidString), "configuration": configurationJSON(preAlert: 600)]) }
            // As after a broker restart, before the node has published its documents again (or on
            // a broker that replays none to a wildcard): the status counts two, no document is retained.
            for id in ids { try node.client.publish(MQTTMessage(topic: node.topics.alarm(id), payload: [], qos: 1, retain: true)) }
            _ = try await node.request("list")
            try await withManager(for: broker, node: daemon.node) { observer, _ in
                let first = try await firstValue(of: observer.alarmUpdates, "the first list", within: .seconds(10)) { _ in true }
                #expect(Set(first.map(\.id)) == Set(ids))
            }
        }
    }

    @Test("Observing connects: the first values are the node's whole list and its decision, as on iOS")
    func observingConnects() async throws {
        try await withDaemon { broker, daemon, _ in
            try await withManager(for: broker, node: daemon.node) { scheduler, _ in
                let attributes = AlarmAttributes<RemoteManagerTests.CookingData>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
                for _ in 0..<3 { try await scheduler.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes)) }
            }
            try await withManager(for: broker, node: daemon.node) { observer, _ in
                // No call but the observation: the first value is the list, whole.
                let first = try await firstValue(of: observer.alarmUpdates, "the first list", within: .seconds(10)) { _ in true }
                #expect(first.count == 3)
                let decision = try await firstValue(of: observer.authorizationUpdates, "the first decision", within: .seconds(10)) { _ in true }
                #expect(decision == .authorized)
                #expect(observer.authorizationState == .authorized)
            }
        }
    }

    @Test("An unreachable broker gives an error that says what to do")
    func unreachable() async throws {
        let port = try TestBroker.freePort()
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: "127.0.0.1", port: port, node: "nowhere", timeout: .seconds(1)))
        let manager = AlarmManager(connection: connection)
        for request in [{ try await manager.pause(id: UUID()) }, { _ = try await manager.requestAuthorization() }] as [@Sendable () async throws -> Void] {
            let error = await #expect(throws: AlarmNodeError.self) { try await request() }
            #expect(error?.code == .unavailable)
            // Settings written in code: the error names them, not alarmctl's flag or the environment.
            #expect(error?.message.contains("refused the connection") == true && error?.message.hasSuffix("[RemoteNodeSettings' host and port]") == true,
                    "\(String(describing: error))")
        }
        await connection.close()
        // A group says the same (it said the broker sent no CONNACK, as if it were no MQTT broker).
        let group = RemoteGroup(settings: RemoteNodeSettings(host: "127.0.0.1", port: port, node: "unused", timeout: .seconds(1)), group: "house")
        let error = await #expect(throws: AlarmNodeError.self) { try await group.list() }
        #expect(error?.message.contains("refused the connection") == true, "\(String(describing: error))")
        await group.close()
    }

    @Test("A node whose status says it is offline: schedule fails at once, saying so")
    func offlineNode() async throws {
        try await withRetainedStatus(#"{"state":"offline"}"#, of: "gone") { broker in
            // Were it to wait for a reply, the suite's time limit would end the test first.
            let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: "gone", timeout: .seconds(600)))
            let attributes = AlarmAttributes<RemoteManagerTests.CookingData>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
            // The status is in (on a busy machine the first request may not see it yet, and then waits as for a prompt).
            #expect(await connection.status()?.isOnline == false)
            let error = await #expect(throws: AlarmNodeError.self) {
                try await AlarmManager(connection: connection).schedule(id: UUID(), configuration: .timer(duration: 60, attributes: attributes))
            }
            #expect(error?.message.hasPrefix("node 'gone' is offline") == true, "\(String(describing: error))")
            #expect(AlarmManager(connection: connection).authorizationState == .notDetermined)
            await connection.close()
        }
    }

    /// Runs `body` with a broker holding `status` as `node`'s retained status, as a node that
    /// published it and then went quiet.
    private func withRetainedStatus(_ status: String, of node: String, _ body: (TestBroker) async throws -> Void) async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (publisher, events) = try clients.start(broker.clientConfiguration(clientID: "publisher"))
                try await events.connected()
                try publisher.publish(MQTTMessage(topic: "alarmd/\(node)/status", string: status, qos: 1, retain: true))
                try await body(broker)
            }
        }
    }

    @Test("A node online that does not answer in time: the error says the request may still be carried out, and how to retry")
    func silentNode() async throws {
        try await withRetainedStatus(#"{"state":"online","authorization":"authorized"}"#, of: "busy") { broker in
            let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: "busy", timeout: .seconds(1)))
            let ghost = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: "bussy", timeout: .seconds(1)))
            let misspelt = #expect(throws: AlarmNodeError.self) { try ghost.currentDocuments() }
            #expect(misspelt?.message.contains("(no status from it on broker \(broker.host):\(broker.port) yet: if this lasts, check the node id, RemoteNodeSettings' node)") == true)
            await ghost.close()
            #expect(await connection.status()?.isOnline == true)
            let error = await #expect(throws: AlarmNodeError.self) { try await AlarmManager(connection: connection).pause(id: UUID()) }
            #expect(error?.message.contains("did not answer within 1.0 seconds: it may still carry the request out, so look at the alarm before you retry")
                    == true, "\(String(describing: error))")
            let attributes = AlarmAttributes<RemoteManagerTests.CookingData>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
            let unanswered = await #expect(throws: AlarmNodeError.self) {
                try await AlarmManager(connection: connection).schedule(id: UUID(), configuration: .timer(duration: 60, attributes: attributes))
            }
            #expect(unanswered?.message.contains("so retry a schedule with the same id (which then changes nothing)") == true)
            await connection.close()
        }
    }

    @Test("A malformed ALARMD_BROKER is refused, never replaced by localhost:1883")
    func malformedEnvironment() async throws {
        let settings = RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER": "mqtts://127.0.0.1:8883", "ALARMD_NODE": "kitchen"])
        #expect(settings.environmentProblem?.hasPrefix("ALARMD_BROKER 'mqtts://127.0.0.1:8883' is not a broker address") == true)
        #expect(RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER": "x y", "ALARMD_USERNAME": "me"]).username == "me")
        let connection = RemoteNodeConnection(settings: settings)
        let error = await #expect(throws: AlarmNodeError.self) { try await AlarmManager(connection: connection).cancel(id: UUID()) }
        #expect(error?.message == settings.environmentProblem)
        // The list's error says so too, rather than blame the node id.
        #expect(throws: AlarmNodeError.unavailable(settings.environmentProblem ?? "")) { try connection.currentDocuments() }
        #expect(!connection.isConnectedToBroker)
        await connection.close()
        // A misspelt protocol is refused too, rather than read as auto; the broker's problem, when both, comes first.
        let misspelt = RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER_PROTOCOL": "mqtt5", "ALARMD_NODE": "kitchen"])
        #expect(misspelt.environmentProblem == "ALARMD_BROKER_PROTOCOL 'mqtt5' is not a protocol: write auto, 5 or 3.1.1")
        let both = RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER": "x y", "ALARMD_BROKER_PROTOCOL": "mqtt5"])
        #expect(both.environmentProblem?.hasPrefix("ALARMD_BROKER 'x y'") == true)
        #expect(RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER_PROTOCOL": "3.1.1"]).brokerProtocol == .v311)
    }

    @Test("A request after close() fails at once, saying it could not be sent")
    func requestAfterClose() async throws {
        let port = try TestBroker.freePort()
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: "127.0.0.1", port: port, node: "closed", timeout: .seconds(60)))
        connection.start()
        await connection.close()
        let error = await #expect(throws: AlarmNodeError.self) { try await AlarmManager(connection: connection).pause(id: UUID()) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.hasPrefix("the request could not be sent to node 'closed'") == true)
    }

    @Test("A request waiting for its reply when close() is called ends at once, saying the connection was closed")
    func requestPendingAtClose() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                // A node that is online but never answers: it only receives the command.
                let (node, events) = try clients.start(broker.clientConfiguration(clientID: "busy"), subscribing: ["alarmd/busy/cmd/#"])
                try await events.connected()
                try node.publish(MQTTMessage(topic: "alarmd/busy/status", string: #"{"state":"online","authorization":"authorized"}"#, qos: 1, retain: true))
                // Were the request to wait out its time, it would fail after 30 s saying the broker did not connect.
                let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: "busy", timeout: .seconds(30)))
                #expect(await connection.status()?.isOnline == true)
                let paused = Task { try await AlarmManager(connection: connection).pause(id: UUID()) }
                _ = try await events.message(on: "alarmd/busy/cmd/pause")
                await connection.close()
                let error = await #expect(throws: AlarmNodeError.self) { try await paused.value }
                #expect(error?.code == .unavailable)
                #expect(error?.message.hasPrefix("node 'busy' had not answered when the connection was closed") == true, "\(String(describing: error))")
            }
        }
    }

    @Test("A request to a connection closed before its first use says it was closed, not that the broker is wrong")
    func requestAfterCloseWithoutStart() async throws {
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: "127.0.0.1", port: try TestBroker.freePort(), node: "closed"))
        await connection.close()
        let error = await #expect(throws: AlarmNodeError.self) { try await AlarmManager(connection: connection).pause(id: UUID()) }
        #expect(error?.message.hasPrefix("the request could not be sent to node 'closed': the connection is closed") == true, "\(String(describing: error))")
    }

    @Test("A request that failed while the broker was out of reach is not sent once it is back")
    func failedRequestNotSentLater() async throws {
        try await TestBroker.withBroker { broker in
            let link = try TCPProxy(upstreamPort: broker.port)
            defer { link.close() }
            try await withTestClients { clients in
                let (observer, events) = try clients.start(broker.clientConfiguration(clientID: "observer"), subscribing: ["alarmd/n1/cmd/#"])
                try await events.connected()
                // A node's status says it is online; nobody answers its commands.
                try observer.publish(MQTTMessage(topic: "alarmd/n1/status", string: #"{"state":"online"}"#, qos: 1, retain: true))
                let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: link.port, node: "n1", timeout: .seconds(1)))
                let manager = AlarmManager(connection: connection)
                connection.start()
                while !connection.isConnectedToBroker { try await Task.sleep(for: .milliseconds(20)) }
                link.acceptsConnections = false
                link.cutConnections()
                while connection.isConnectedToBroker { try await Task.sleep(for: .milliseconds(20)) }
                let error = await #expect(throws: AlarmNodeError.self) { try await manager.cancel(id: UUID()) }
                #expect(error?.code == .unavailable)
                link.acceptsConnections = true
                while !connection.isConnectedToBroker { try await Task.sleep(for: .milliseconds(20)) }
                // Nobody answers this one either; it is sent, and the cancel, had it been kept, would come before it.
                _ = try? await manager.pause(id: UUID())
                #expect(try await events.message(on: "alarmd/n1/cmd/#").topic == "alarmd/n1/cmd/pause")
                await connection.close()
            }
        }
    }

    @Test("A group request that failed while the broker was out of reach is not sent once it is back")
    func failedGroupRequestNotSentLater() async throws {
        try await TestBroker.withBroker { broker in
            let link = try TCPProxy(upstreamPort: broker.port)
            defer { link.close() }
            try await withTestClients { clients in
                let (_, events) = try clients.start(broker.clientConfiguration(clientID: "observer"), subscribing: ["alarmd/groups/house/cmd/#"])
                try await events.connected()
                // The group has no connection state to read: its client's log says when it connects and loses the link.
                let log = LogRecorder()
                func logged(_ message: String) -> Int { log.entries.count { $0.message == message } }
                let group = RemoteGroup(settings: RemoteNodeSettings(host: broker.host, port: link.port, node: "unused", timeout: .seconds(1)),
                                        group: "house", logger: log.logger(at: .info))
                group.start()
                while logged("MQTT connected") == 0 { try await Task.sleep(for: .milliseconds(20)) }
                link.acceptsConnections = false
                link.cutConnections()
                while logged("MQTT connection lost") == 0 { try await Task.sleep(for: .milliseconds(20)) }
                let error = await #expect(throws: AlarmNodeError.self) { try await group.perform(.cancel, id: UUID()) }
                #expect(error?.code == .unavailable)
                link.acceptsConnections = true
                while logged("MQTT connected") == 1 { try await Task.sleep(for: .milliseconds(20)) }
                // No member answers this one either; it is sent, and the cancel, had it been kept, would come before it.
                _ = try await group.perform(.pause, id: UUID())
                #expect(try await events.message(on: "alarmd/groups/house/cmd/#").topic == "alarmd/groups/house/cmd/pause")
                await group.close()
            }
        }
    }

    @Test("The environment names the node and broker")
    func environment() {
        let settings = RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER": "10.0.0.5:1884", "ALARMD_NODE": "kitchen"])
        #expect(settings.host == "10.0.0.5" && settings.port == 1884 && settings.node == "kitchen")
        #expect(RemoteNodeSettings.parseBroker("broker.local")! == ("broker.local", 1883))
        #expect(RemoteNodeSettings.parseBroker("[::1]:1885")! == ("::1", 1885))
        #expect(RemoteNodeSettings.parseBroker("host:notaport") == nil)
        #expect(RemoteNodeSettings.parseBroker("mqtt://localhost:1884/")! == ("localhost", 1884))
        for accepted in ["::1", "[::1]", "10.0.0.5", "host-1.local:1884", "[fe80::1%eth0]:1883", "mqtt://[::1]", "mqtt://h"] {
            #expect(RemoteNodeSettings.parseBroker(accepted) != nil, "\(accepted)")
        }
        for malformed in ["bad:host:x", "mqtts://localhost:8883", "mqtt://", "mqtt://mqtt://h", "tcp://h:1883", "1.2.3.4:5:6", "a b", "[::1", "[::1]x", ":1883", "h:0", "h:", ""] {
            #expect(RemoteNodeSettings.parseBroker(malformed) == nil, "\(malformed)")
        }
    }
}
