import AlarmKit
import AlarmNode
import Foundation
import Mosquitto
import MosquittoTestSupport
import Testing

/// SPEC §3 "Intents: where a node may publish", with the real alarmd: `[intents] allow` opens
/// topics besides `<base>/intents/#`, never a node's commands or the node's own sim/ and ha/.
@Suite("alarmd intent topics", .serialized, .timeLimit(.minutes(3)))
struct IntentTopicTests {
    private func withConfiguredDaemon(_ toml: String, _ body: (TestBroker, DaemonProcess, NodeClient) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-intents-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appending(path: "alarmd.toml")
        try Data(toml.utf8).write(to: config)
        try await withDaemon(arguments: ["--config", config.path], body)
    }

    private func intent(_ topic: String, _ payload: String = "ON {alarmID}") -> String {
        #"{"publish":{"topic":"\#(topic)","payload":"\#(payload)","retain":false}}"#
    }

    private func alarmID(in reply: [String: JSONValue]) throws -> UUID {
        guard case .string(let text)? = reply["alarm"]?["id"], let id = UUID(uuidString: text) else {
            throw TestSupportError("no alarm in reply \(reply)")
        }
        return id
    }

    @Test("Allowed intents run; others are refused at schedule with invalidConfiguration naming the field and intents.allow")
    func allowList() async throws {
        try await withConfiguredDaemon("[intents]\nallow = [\"home/lights/+\", \"alarmd/#\", \"+/+/cmd/#\"]\n") { _, _, node in
            // Allowed by the filter: it runs, and says so in an event.
            let id = try alarmID(in: try await node.request("schedule", ["configuration": configurationJSON(
                preAlert: 1, stopIntent: intent("home/lights/set"))]))
            _ = try await node.event("alerting", alarmID: id)
            _ = try await node.request("stop", ["id": .string(id.uuidString)])
            let published = try await node.waitForMessage("the intent's message") { $0.topic == "home/lights/set" }
            #expect(published.payloadString == "ON \(id.uuidString)")
            #expect(try await node.event("intent", alarmID: id)["topic"] == .string("home/lights/set"))

            // Under <base>/intents/ with no filter needed.
            let own = "\(node.topics.base)/intents/coffee"
            let reply = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600, stopIntent: intent(own))])
            #expect(reply["ok"] == .bool(true), "\(reply)")

            // Outside every filter, a node's command topic, the node's own sim/ and ha/: refused,
            // even though "alarmd/#" and "+/+/cmd/#" match some of them.
            let before = try await node.request("list")
            for topic in ["home/door/unlock", "\(node.topics.base)/cmd/cancel", "alarmd/other-node/cmd/schedule",
                          "\(node.topics.base)/sim/press", "\(node.topics.base)/ha/stop"] {
                let refused = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600, stopIntent: intent(topic))])
                #expect(refused["error"]?["code"] == .string("invalidConfiguration"), "\(topic): \(refused)")
                #expect(refused["error"]?["field"] == .string("configuration.stopIntent.publish.topic"), "\(topic): \(refused)")
                guard case .string(let message)? = refused["error"]?["message"] else {
                    Issue.record("no message in \(refused)")
                    continue
                }
                #expect(message.contains(topic), "\(message)")
                if topic == "home/door/unlock" { #expect(message.contains("intents.allow"), "\(message)") }
            }
            // The secondary intent is checked too, and named.
            guard case .object(var configuration) = configurationJSON(preAlert: 600, secondary: "custom") else { return }
            configuration["secondaryIntent"] = try JSONDecoder().decode(JSONValue.self, from: Data(intent("garage/open").utf8))
            let secondary = try await node.request("schedule", ["configuration": .object(configuration)])
            #expect(secondary["error"]?["field"] == .string("configuration.secondaryIntent.publish.topic"), "\(secondary)")
            #expect(try await node.request("list")["alarms"] == before["alarms"])
        }
    }

    @Test("An alarm restored with an intent no longer allowed rings and stops, but its intent is not run: the log and an event say why")
    func restoredIntentNotRun() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-intents-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Saved by an alarmd that allowed any topic (before intents.allow existed).
        let id = UUID()
        var engine = AlarmEngine()
        let configuration = try AlarmJSON.decoder.decode(
            AlarmManager.AlarmConfiguration<JSONValue>.self,
            from: AlarmJSON.encoder.encode(configurationJSON(preAlert: 3, stopIntent: intent("home/door/unlock", "open"))))
        _ = try engine.schedule(id: id, configuration: configuration, now: Date())
        try writeState(NodeState(authorization: .authorized, alarms: Array(engine.records.values)), to: directory)

        try await TestBroker.withBroker { broker in
            try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))", stateDirectory: directory) { daemon in
                try await withTestClients { clients in
                    let node = try await NodeClient.connect(broker: broker, node: daemon.node, clients: clients)
                    try await daemon.waitForLog("restored alarm has an intent whose topic is no longer allowed")
                    // The retained document, not the event: the restored timer is due 3 s after it was
                    // written, and an event published before this client subscribed would be lost.
                    _ = try await node.document(id, within: .seconds(15)) { $0.state == .alerting }
                    let mark = node.count
                    try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"stop","duration":0.1}"#))
                    _ = try await node.event("stopped", alarmID: id, after: mark)
                    let event = try await node.event("intent", alarmID: id, after: mark)
                    #expect(event["topic"] == .string("home/door/unlock"))
                    guard case .string(let reason)? = event["refused"] else {
                        Issue.record("the intent event says no reason: \(event)")
                        return
                    }
                    #expect(reason.contains("intents.allow"))
                    try await daemon.waitForLog("intent not run: its topic is not allowed")
                    // The stop's reply-free path is done once the alarm's removal is retained.
                    try await node.waitForMessage("the alarm's removal", after: mark) { $0.topic == node.topics.alarm(id) && $0.payload.isEmpty }
                    #expect(!node.received(after: 0).contains { $0.topic == "home/door/unlock" })
                }
            }
        }
    }
}
