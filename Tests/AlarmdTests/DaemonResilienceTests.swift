import AlarmKit
@testable import AlarmNode
import Foundation
import Mosquitto
import MosquittoTestSupport
import Synchronization
import Testing

/// The real alarmd when things go wrong: the broker dies, the daemon dies, it restarts. The time
/// limit (per test, long enough for the long forms too) only turns a hang into a failure.
@Suite("alarmd resilience", .serialized, .timeLimit(.minutes(5)))
struct DaemonResilienceTests {
    @Test("Killed with SIGKILL, the daemon's will publishes offline")
    func willOnCrash() async throws {
        try await withDaemon { _, daemon, node in
            let online = try await node.waitForMessage("online") {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
            }
            let mark = node.count
            await daemon.kill()
            let offline = try await node.waitForMessage("offline from the will", after: mark, within: .seconds(30)) {
                $0.topic == node.topics.status
            }
            // MQTT cannot stamp when a will fires: it says since when the node had been online.
            let since = try #require(NodeClient.object(online.payload)?["since"])
            #expect(NodeClient.object(offline.payload) == ["state": .string("offline"), "lastOnline": since])
        }
    }

    @Test("SIGTERM publishes offline, turns the buzzer off, and exits 0 at once, under systemd's watchdog too")
    func gracefulShutdown() async throws {
        // As systemd runs it: a notify socket, and the unit's WatchdogSec=30s (a ping every 15 s).
        let notifySocket = "@alarmd-test-\(UUID().uuidString)"
        let systemd = try DatagramListener(address: notifySocket)
        try await withDaemon(environment: ["NOTIFY_SOCKET": notifySocket, "WATCHDOG_USEC": "30000000"]) { _, daemon, node in
            #expect(try systemd.receive(within: .seconds(10)) == "READY=1")
            let id = UUID()
            _ = try await node.request("schedule", ["id": .string(id.uuidString), "configuration": configurationJSON(preAlert: 1)])
            _ = try await node.event("alerting", alarmID: id)
            let mark = node.count
            // A shutdown that waits for the watchdog's next ping (up to 15 s, the buzzer sounding)
            // outlasts terminate()'s 10 s, and is killed.
            #expect(await daemon.terminate() == 0)
            var notifications: [String] = []
            while notifications.last != "STOPPING=1" { notifications.append(try systemd.receive(within: .seconds(5))) }
            #expect(notifications.allSatisfy { $0 == "WATCHDOG=1" || $0 == "STOPPING=1" })
            let offline = try await node.waitForMessage("offline", after: mark) {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("offline")
            }
            // A clean shutdown says when it went offline, and is not the will.
            let object = NodeClient.object(offline.payload)
            #expect(object?["since"].map { if case .string = $0 { true } else { false } } == true)
            #expect(object?["lastOnline"] == nil)
            try await node.waitForMessage("buzzer off", after: mark) {
                $0.topic == node.topics.simulatedOutputs && NodeClient.object($0.payload)?["buzzer"] == .bool(false)
            }
            #expect(daemon.log.contains("hardware off"))
            #expect(daemon.log.contains("event=alerting") && daemon.log.contains("alarm event"), "the journal names the alert")
        }
    }

    /// SIGHUP's default action ends a process, and systemd does not restart a unit ended by it:
    /// alarmd must catch it before it says READY=1. The window shows only when alarmd's threads
    /// wait for a core, so every core is kept busy while it starts.
    @Test("A SIGHUP as soon as systemd hears READY=1 reloads the configuration, on a busy machine too")
    func hangupAtReady() async throws {
        try await TestBroker.withBroker { broker in
            for attempt in 1...10 {
                let notifySocket = "@alarmd-test-\(UUID().uuidString)"
                let systemd = try DatagramListener(address: notifySocket)
                let load = BusyCores()
                defer { load.stop() }
                try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))",
                                            environment: ["NOTIFY_SOCKET": notifySocket]) { daemon in
                    #expect(try systemd.receive(within: .seconds(20)) == "READY=1")
                    daemon.signal(SIGHUP)
                    load.stop()
                    try await daemon.waitForLog("SIGHUP: reading the configuration again", within: .seconds(5))
                    #expect(daemon.isRunning, "start \(attempt): alarmd ended")
                }
            }
        }
    }

    @Test("After a restart the alarms are still there, the countdown toward the same fire date")
    func restartKeepsState() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-restart-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let nodeName = "restart-\(UUID().uuidString.prefix(6))"
                let node = try await NodeClient.connect(broker: broker, node: nodeName, clients: clients)
                let document = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { first in
                    try await node.waitForMessage("online") { $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online") }
                    let reply = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 3600)])
                    let beforeKill = node.count
                    await first.kill()
                    try await node.waitForWill(after: beforeKill)
                    return try AlarmJSON.decoder.decode(AlarmDocument.self, from: AlarmJSON.encoder.encode(reply["alarm"]!))
                }
                let mark = node.count
                let list = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { _ in
                    try await node.waitForMessage("online again", after: mark) {
                        $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
                    }
                    return try await node.request("list")
                }
                let documents = try AlarmJSON.decoder.decode([AlarmDocument].self, from: AlarmJSON.encoder.encode(list["alarms"]!))
                #expect(documents.map(\.id) == [document.id])
                let restored = try #require(documents.first?.nextAlertDate)
                let scheduled = try #require(document.nextAlertDate)
                #expect(abs(restored.timeIntervalSince(scheduled)) < 0.002)
            }
        }
    }

    @Test("A damaged state file is kept aside and reported, never silently replaced")
    func damagedStateFile() async throws {
        try await withBrokerAndFolder("damaged") { broker, clients, directory in
            try Data("{\"schemaVersion\":1,\"alarms\":[{\"id\":".utf8).write(to: directory.appending(path: "state.json"))
            let nodeName = "damaged-\(UUID().uuidString.prefix(6))"
            let node = try await NodeClient.connect(broker: broker, node: nodeName, clients: clients)
            let (status, log) = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { daemon in
                let status = try await node.waitForMessage("status with the problem") {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["stateFileProblem"] != nil
                }
                return (status, daemon.log)
            }
            let problem = NodeClient.object(status.payload)?["stateFileProblem"]
            #expect(problem.map { "\($0)".contains("damaged") } == true)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(names.contains { $0.hasPrefix("state.json.damaged-") })
            #expect(log.contains("state file damaged"))
        }
    }

    @Test("An alarm whose file is damaged comes back from its retained document on the broker, as scheduled; a timer's is cleared")
    func damagedAlarmFileRestoredFromBroker() async throws {
        try await withBrokerAndFolder("restore") { broker, clients, directory in
            let nodeName = "restore-\(UUID().uuidString.prefix(6))"
            let node = try await NodeClient.connect(broker: broker, node: nodeName, clients: clients)
            let weekly = #"{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["mon","fri"]}}}"#
            let (alarm, timer) = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { _ in
                try await node.waitForMessage("online") { $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online") }
                let alarm = try await node.request("schedule", ["configuration": configurationJSON(schedule: weekly, title: "Wake")])
                let timer = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 3600)])
                guard case .string(let alarmID)? = alarm["alarm"]?["id"], case .string(let timerID)? = timer["alarm"]?["id"] else {
                    throw TestSupportError("schedule gave no alarm: \(alarm), \(timer)")
                }
                return (alarmID, timerID)
            }
            // An SD card's damage: both files cut short while the node was stopped.
            for id in [alarm, timer] { try Data("{\"schema".utf8).write(to: directory.appending(path: "alarms/\(id).json")) }
            let mark = node.count
            let (status, list) = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { _ in
                let status = try await node.waitForMessage("status naming the restored alarm", after: mark) {
                    $0.topic == node.topics.status && "\(NodeClient.object($0.payload)?["stateFileProblem"] ?? .null)".contains("came back")
                }
                return (status, try await node.request("list"))
            }
            let problem = "\(NodeClient.object(status.payload)?["stateFileProblem"] ?? .null)"
            #expect(problem.contains("alarm \(alarm) came back from its retained copy on the broker"))
            #expect(!problem.contains("alarm \(timer) came back"))
            guard case .array(let alarms)? = list["alarms"] else { throw TestSupportError("list gave no alarms: \(list)") }
            #expect(alarms.map { $0["id"] } == [.string(alarm)])
            #expect(alarms.first?["attributes"]?["presentation"]?["alert"]?["title"] == .string("Wake"))
            // Written again: the next start reads it from its own file.
            #expect(FileManager.default.fileExists(atPath: directory.appending(path: "alarms/\(alarm).json").path))
        }
    }

    /// Down for `outageSeconds` at least, and until a second after the alarm was due. The node's
    /// reconnect attempts are a second apart at most while the broker is away, so everything is
    /// back within 2 s of its return (issue 8), and the daemon's memory may not grow by more than
    /// 4 MiB meanwhile (see `frozenBroker`).
    @Test("The broker dies while an alarm falls due: it alerts on time; everything is republished within 2 s of its return; memory stays bounded")
    func brokerRestart() async throws {
        try await withDaemonBehindProxy { broker, proxy, daemon, node in
            // More alarms than the node republishes in one turn on its actor, so that every chunk is seen.
            var others: [UUID] = []
            for _ in 0..<(2 * MQTTBridge.republishChunk + 3) {
                let reply = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 3600)])
                guard case .object(let alarm)? = reply["alarm"], case .string(let text)? = alarm["id"], let other = UUID(uuidString: text) else {
                    throw TestSupportError("schedule gave no alarm: \(reply)")
                }
                others.append(other)
            }
            let id = UUID()
            _ = try await node.request("schedule", ["id": .string(id.uuidString), "configuration": configurationJSON(preAlert: 2)])
            let document = try await node.document(id) { $0.state == .countdown }
            let fireDate = try #require(document.nextAlertDate)
            let residentBefore = try #require(daemon.residentKilobytes)
            proxy.acceptsConnections = false
            try await broker.stop()
            let stoppedAt = Date()
            // The alarm falls due while the broker is down.
            let residentPeak = try await Self.residentPeak(of: daemon, from: residentBefore,
                                                           until: max(stoppedAt + Self.outageSeconds, fireDate + 1))
            let mark = node.count
            let connections = node.connectionCount
            try await broker.start()
            // alarmd may reach the broker again only once this test's client has resubscribed
            // (its `.connected` comes with the SUBACKs; `isConnected` before them): an event it
            // sends on its return cannot pass unseen.
            try await node.waitForConnection(beyond: connections)
            proxy.acceptsConnections = true
            let returned = Date()
            // The restarted broker has no retained state: the node republishes it.
            let alerting = try await node.document(id, after: mark, within: .seconds(20)) { $0.state == .alerting }
            #expect(alerting.presentationState != nil)
            let event = try await node.event("alerting", alarmID: id, after: mark, within: .seconds(20))
            guard case .string(let at)? = event["at"], let alertedAt = AlarmJSON.date(from: at) else {
                Issue.record("no time on the alerting event")
                return
            }
            // Alerted locally at the fire date, not when the broker came back.
            #expect(abs(alertedAt.timeIntervalSince(fireDate)) < 0.5)
            try await node.waitForMessage("status republished", after: mark) {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
            }
            // Online first, then what the node did while away: a subscriber such as Home Assistant
            // drops an event that arrives while the node still looks offline.
            let order = node.received(after: mark).compactMap { message -> String? in
                guard let object = NodeClient.object(message.payload) else { return nil }
                if message.topic == node.topics.status { return object["state"] == .string("online") ? "online" : nil }
                return message.topic == node.topics.events && object["event"] == .string("alerting") ? "alerting" : nil
            }
            #expect(order.first == "online" && order.contains("alerting"), "\(order)")
            for other in others {
                _ = try await node.document(other, after: mark) { $0.state == .countdown }
            }
            let resync = Date().timeIntervalSince(returned)
            #expect(resync < 2, "state took \(resync) s to come back after the broker's return")
            #expect(daemon.isRunning)
            try Self.expectBounded(daemon, before: residentBefore, peak: residentPeak, outage: returned.timeIntervalSince(stoppedAt))
        }
    }

    @Test("A command published retained runs when sent; replayed at a new subscription, it is refused, saying why")
    func retainedCommandRunsOnce() async throws {
        try await withDaemonBehindProxy { _, proxy, _, node in
            let id = UUID()
            let command: [String: JSONValue] = [
                "id": .string(id.uuidString), "configuration": configurationJSON(preAlert: 3600),
                "replyTo": .string(node.replyTopic), "correlationID": .string("retained"),
            ]
            let isReply = { @Sendable (message: MQTTMessage) in
                message.topic == node.replyTopic && NodeClient.object(message.payload)?["correlationID"] == .string("retained")
            }
            let sent = node.count
            try node.client.publish(MQTTMessage(topic: "\(node.topics.base)/cmd/schedule",
                                                payload: Array(try AlarmJSON.encoder.encode(JSONValue.object(command))), qos: 1, retain: true))
            let reply = try await node.waitForMessage("reply to the retained schedule", after: sent, where: isReply)
            #expect(NodeClient.object(reply.payload)?["ok"] == .bool(true))
            _ = try await node.request("cancel", ["id": .string(id.uuidString)])

            // Cut off, alarmd connects and subscribes again: the broker replays the retained command.
            let cut = node.count
            proxy.cutConnections()
            try await node.waitForMessage("the node online again", after: cut) {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
            }
            // Sent after the node subscribed, so handled after the replay: the alarm is still cancelled.
            let list = try await node.request("list")
            #expect(list["alarms"] == .array([]))
            let replays = node.received(after: cut).filter(isReply).compactMap { NodeClient.object($0.payload) }
            #expect(replays.count == 1)
            #expect(replays.first?["ok"] == .bool(false) && replays.first?["error"]?["code"] == .string("badRequest"))
            guard case .string(let reason)? = replays.first?["error"]?["message"] else { throw TestSupportError("no reason in \(replays)") }
            #expect(reason.contains("publish commands without retain"))
        }
    }

    /// A broker, alarmd reaching it through a proxy the test can shut, and the test's client, as
    /// `withDaemon` gives them.
    func withDaemonBehindProxy(_ body: (TestBroker, TCPProxy, DaemonProcess, NodeClient) async throws -> Void) async throws {
        try await TestBroker.withBroker { broker in
            let proxy = try TCPProxy(upstreamPort: broker.port)
            defer { proxy.close() }
            try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))",
                                        arguments: ["--broker", "127.0.0.1:\(proxy.port)"]) { daemon in
                try await withTestClients { clients in
                    let node = try await NodeClient.connect(broker: broker, node: daemon.node, clients: clients)
                    try await node.waitForMessage("the node online") { message in
                        message.topic == node.topics.status && NodeClient.object(message.payload)?["state"] == .string("online")
                    }
                    try await body(broker, proxy, daemon, node)
                }
            }
        }
    }

    /// Waits until `end`, sampling the daemon's resident set every 100 ms; the largest, at least `before`.
    static func residentPeak(of daemon: DaemonProcess, from before: Int, until end: Date) async throws -> Int {
        var peak = before
        while Date() < end {
            try await Task.sleep(for: .milliseconds(100))
            peak = max(peak, daemon.residentKilobytes ?? 0)
        }
        return peak
    }

    /// The daemon's resident set grew by 4 MiB at most from `before`, through `peak` and now.
    static func expectBounded(_ daemon: DaemonProcess, before: Int, peak: Int, outage: TimeInterval) throws {
        let peak = max(peak, daemon.residentKilobytes ?? 0)
        #expect(peak - before <= 4096, "resident set \(before) KiB before the outage, \(peak) KiB at its peak")
        print("alarmd's resident set: \(before) KiB before the broker's outage of \(Int(outage)) s, \(peak) KiB at most until the resync")
    }

    /// How long the broker stays away (killed, or frozen) at least: 5 s in CI; `ALARMD_OUTAGE_SECONDS=30` for the long form.
    static let outageSeconds = Double(ProcessInfo.processInfo.environment["ALARMD_OUTAGE_SECONDS"] ?? "") ?? 5

    /// Timing, and why it is checked this way: "on time" is first an order of events (each alarm
    /// due after the freeze began and alerted before the thaw, which comes 3 s after the last is due),
    /// then the lateness the broker-restart test allows too, 0.5 s (a few milliseconds are expected).
    /// The resync bound, 2 s after the thaw, is the requirement itself (issue 8, docs/reliability.md);
    /// mosquitto sends what waited as soon as it runs again, measured in milliseconds. Memory: what
    /// the node publishes meanwhile (documents, events, the simulated buzzer's every change) waits
    /// in libmosquitto's queue until the keepalive gives the connection up, then in the client's
    /// bounded buffer; the daemon's resident set, sampled through the freeze and the resync, may
    /// not grow by more than 4 MiB. The node publishes a few messages a second here, so this
    /// catches growth that does not depend on them (a leak per tick, a task per retry); the
    /// buffer's own bound is tested on its own (`OutgoingBufferTests`) and through the client
    /// (`MQTTClientTests.bufferingWhileUnreachable`).
    @Test("A frozen broker (SIGSTOP) while alarms fall due: they alert on time, before it thaws; state resyncs within 2 s of its return; memory stays bounded")
    func frozenBroker() async throws {
        // The test's own client outlasts the freeze (the daemon's, with its 15 s keepalive, need not).
        try await withDaemon(clientKeepAlive: 120) { broker, daemon, node in
            let ids = (0..<3).map { _ in UUID() }
            var fireDates: [UUID: Date] = [:]
            for (index, id) in ids.enumerated() {
                let reply = try await node.request("schedule", ["id": .string(id.uuidString),
                                                                "configuration": configurationJSON(preAlert: 3 + Double(index))])
                let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: AlarmJSON.encoder.encode(reply["alarm"]!))
                let fireDate: Date = try #require(document.nextAlertDate)
                fireDates[id] = fireDate
            }
            let residentBefore = try #require(daemon.residentKilobytes)
            broker.freeze()
            let frozenAt = Date()
            // The alarms must fall due while the broker is frozen: it stays frozen until well after
            // the last one, however long scheduling took.
            try #require(fireDates.values.allSatisfy { $0 > frozenAt }, "scheduling took more than 3 s; the first alarm was due before the freeze")
            let residentPeak = try await Self.residentPeak(of: daemon, from: residentBefore,
                                                           until: max(frozenAt + Self.outageSeconds, fireDates.values.max()! + 3))
            let mark = node.count
            let thawed = Date()
            broker.thaw()
            for id in ids {
                let alerting = try await node.document(id, after: mark, within: .seconds(30)) { $0.state == .alerting }
                #expect(alerting.presentationState != nil)
                let event = try await node.event("alerting", alarmID: id, within: .seconds(30))
                guard case .string(let at)? = event["at"], let alertedAt = AlarmJSON.date(from: at) else {
                    Issue.record("no time on the alerting event")
                    continue
                }
                // Alerted locally while the broker was frozen, not when it came back.
                let due = fireDates[id]!
                #expect(alertedAt >= due && alertedAt < thawed, "alerted at \(at), due \(due), thawed \(thawed)")
                #expect(alertedAt.timeIntervalSince(due) < 0.5, "alerted at \(at), due \(due)")
            }
            let resync = Date().timeIntervalSince(thawed)
            #expect(resync < 2, "state took \(resync) s to resync")
            #expect(daemon.isRunning)
            try Self.expectBounded(daemon, before: residentBefore, peak: residentPeak, outage: thawed.timeIntervalSince(frozenAt))
        }
    }

    /// Runs `body` with alarmd (given `arguments`) online on a private broker set up with
    /// `settings`, and a client of the node; stops both after it.
    static func withNodeOnBroker(settings: String, arguments: [String] = [],
                                 _ body: (DaemonProcess, NodeClient) async throws -> Void) async throws {
        let broker = try await TestBroker(settings: settings)
        try await broker.start()
        do {
            try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))", arguments: arguments) { daemon in
                try await withTestClients { clients in
                    let node = try await NodeClient.connect(broker: broker, node: daemon.node, clients: clients)
                    try await node.waitForMessage("the node online") { message in
                        message.topic == node.topics.status && NodeClient.object(message.payload)?["state"] == .string("online")
                    }
                    try await body(daemon, node)
                }
            }
        } catch {
            await broker.shutDown()
            throw error
        }
        await broker.shutDown()
    }

    /// A broker set up with a small `max_packet_size` (announced over MQTT 5) cannot take a long
    /// list: before, the node only logged it, and the requester waited until it gave up (alarmctl:
    /// "the node did not answer").
    @Test("A reply larger than the broker's max_packet_size is answered with an error saying so")
    func replyTooLargeForBroker() async throws {
        try await Self.withNodeOnBroker(settings: "max_packet_size 2000") { daemon, node in
            for title in ["One", "Two", "Three", "Four", "Five", "Six"] {
                let reply = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 3600, title: title)])
                #expect(reply["ok"] == .bool(true), "a single alarm's reply fits")
            }
            let reply = try await node.request("list", within: .seconds(5))
            #expect(reply["ok"] == .bool(false))
            #expect(reply["error"]?["code"] == .string("internal"))
            guard case .string(let message)? = reply["error"]?["message"] else {
                Issue.record("no error message in \(reply)")
                return
            }
            #expect(message.contains("max_packet_size"))
        }
    }

    /// Over MQTT 3.1.1 a broker does not announce its max_packet_size: it closes the connection on
    /// a packet over it, which the node republishes at every connection. Before, the log's hint
    /// named only another client with the same id, which sent the user looking for the wrong thing.
    @Test("Over MQTT 3.1.1, a document over the broker's max_packet_size ends every connection: the log's hint names that limit")
    func documentTooLargeOverMQTT311() async throws {
        try await Self.withNodeOnBroker(settings: "max_packet_size 2000", arguments: ["--broker-protocol", "3.1.1"]) { daemon, node in
            // The command fits; the node's document of it (about 900 bytes more) does not.
            let metadata = String(repeating: "x", count: 1600)
            try node.client.publish(MQTTMessage(topic: "\(node.topics.base)/cmd/schedule", string: """
                {"configuration":{"countdownDuration":{"preAlert":3600},"attributes":{"presentation":{"alert":{"title":"Big"}},
                 "tintColor":"#FFFFFF","metadata":{"m":"\(metadata)"}}}}
                """, qos: 1))
            try await daemon.waitForLog("MQTT connections keep ending soon after they start", within: .seconds(30))
            #expect(daemon.log.contains("max_packet_size"))
        }
    }

    /// The reply to a schedule, the alarm's document, is larger than the command: a command that fits
    /// the broker can have a reply that does not. Before, the error only said to ask for fewer alarms:
    /// the requester took the schedule for failed (alarmctl exits 1) while the alarm was in effect.
    @Test("A schedule whose reply is too large for the broker is answered so, and as carried out: the alarm is in effect")
    func scheduleReplyTooLargeForBroker() async throws {
        try await Self.withNodeOnBroker(settings: "max_packet_size 2000") { daemon, node in
            let id = UUID().uuidString
            let configuration = try JSONDecoder().decode(JSONValue.self, from: Data("""
                {"countdownDuration":{"preAlert":3600},"attributes":{"presentation":{"alert":{"title":"Big"}},
                 "tintColor":"#FFFFFF","metadata":{"m":"\(String(repeating: "x", count: 1300))"}}}
                """.utf8))
            let reply = try await node.request("schedule", ["id": .string(id), "configuration": configuration])
            #expect(reply["ok"] == .bool(false))
            guard case .string(let message)? = reply["error"]?["message"] else {
                Issue.record("no error message in \(reply)")
                return
            }
            #expect(message.contains("max_packet_size") && message.contains("carried out"), "\(message)")
            #expect(try await node.request("cancel", ["id": .string(id)])["ok"] == .bool(true), "the alarm is in effect")
        }
    }
}

/// Threads that keep every core busy until stopped, so that a start's threads wait for a core.
final class BusyCores: Sendable {
    private let running = Atomic<Bool>(true)

    init() {
        for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
            // A thread, not a task: the load must not wait for the test's cooperative pool.
            Thread { [self] in while running.load(ordering: .relaxed) {} }.start()
        }
    }

    func stop() { running.store(false, ordering: .relaxed) }
}
