import AlarmKit
import Foundation
import Mosquitto
import MosquittoTestSupport
import Testing

/// The authorization prompt (docs/mqtt.md) on a node configured with `authorization = "prompt"`.
@Suite("alarmd authorization prompt", .serialized, .timeLimit(.minutes(3)))
struct AuthorizationTests {
    private func withPromptingDaemon(promptSeconds: Int = 5, _ body: (DaemonProcess, NodeClient) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-prompt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appending(path: "alarmd.toml")
        try Data("[node]\nauthorization = \"prompt\"\n[hardware]\nprompt-duration = \(promptSeconds)\n".utf8).write(to: config)
        try await withDaemon(arguments: ["--config", config.path]) { _, daemon, node in
            try await body(daemon, node)
        }
    }

    @Test("SIGTERM while a prompt waits: the node goes offline and exits, without waiting for the prompt's end (systemd would kill it first)")
    func sigtermDuringPrompt() async throws {
        // The longest prompt: an exit within the deadline below is one that did not wait it out.
        try await withPromptingDaemon(promptSeconds: 600) { daemon, node in
            try node.client.publish(MQTTMessage(topic: node.topics.command(.schedule),
                                                payload: Array(try AlarmJSON.encoder.encode(JSONValue.object(["configuration": configurationJSON(preAlert: 600)]))), qos: 1))
            try await daemon.waitForLog("authorization prompt: press stop")
            let mark = node.count
            let deadline = ContinuousClock.now + .seconds(60)
            daemon.signal(SIGTERM)
            while daemon.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!daemon.isRunning, "alarmd still waits for the 600 s prompt a minute after SIGTERM")
            try await node.waitForMessage("the offline status", after: mark, within: .seconds(2)) {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("offline")
            }
        }
    }

    @Test("Undetermined: schedule prompts, a stop press authorizes, and the schedule goes through")
    func stopAuthorizes() async throws {
        try await withPromptingDaemon { _, node in
            try await node.waitForMessage("undetermined status") {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["authorization"] == .string("notDetermined")
            }
            async let reply = node.request("schedule", ["configuration": configurationJSON(preAlert: 600)])
            // The prompt chirps and blinks: the LED changes while nothing alerts.
            try await node.waitForMessage("the prompt's LED") {
                $0.topic == node.topics.simulatedOutputs && NodeClient.object($0.payload)?["led"] == .bool(true)
            }
            try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"stop","duration":0.1}"#))
            let answer = try await reply
            #expect(answer["ok"] == .bool(true))
            let event = try await node.event("authorization")
            #expect(event["authorization"] == .string("authorized"))
            try await node.waitForMessage("authorized status") {
                $0.topic == node.topics.status && NodeClient.object($0.payload)?["authorization"] == .string("authorized")
            }
        }
    }

    @Test("A snooze press denies; schedule then fails with unauthorized")
    func snoozeDenies() async throws {
        try await withPromptingDaemon { _, node in
            async let decision = node.request("requestAuthorization")
            try await node.waitForMessage("the prompt's LED") {
                $0.topic == node.topics.simulatedOutputs && NodeClient.object($0.payload)?["led"] == .bool(true)
            }
            try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"snooze","duration":0.1}"#))
            #expect(try await decision == ["ok": .bool(true), "authorization": .string("denied"), "correlationID": try await decision["correlationID"]!])
            let refused = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600)])
            #expect(refused["error"]?["code"] == .string("unauthorized"))
        }
    }

    @Test("While an alarm alerts a press stops it, not the prompt hidden under its pattern; the next press answers the prompt")
    func pressDuringAlertStopsTheAlarm() async throws {
        // A node restored undetermined (as after `alarmd reset-authorization`) with a timer that
        // is about to alert.
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-prompt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let id = UUID()
        var engine = AlarmEngine()
        let configuration = try AlarmJSON.decoder.decode(
            AlarmManager.AlarmConfiguration<JSONValue>.self, from: AlarmJSON.encoder.encode(configurationJSON(preAlert: 3)))
        _ = try engine.schedule(id: id, configuration: configuration, now: Date())
        let state = NodeState(authorization: .notDetermined, alarms: Array(engine.records.values))
        try writeState(state, to: directory)
        let config = directory.appending(path: "alarmd.toml")
        try Data("[node]\nauthorization = \"prompt\"\n[hardware]\nprompt-duration = 20\n".utf8).write(to: config)

        try await TestBroker.withBroker { broker in
            try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))", stateDirectory: directory,
                                        arguments: ["--config", config.path]) { daemon in
                try await withTestClients { clients in
                    let node = try await NodeClient.connect(broker: broker, node: daemon.node, clients: clients)
                    // The retained document, not the event: the restored timer is due 3 s after it was
                    // written, and an event published before this client subscribed would be lost.
                    _ = try await node.document(id, within: .seconds(15)) { $0.state == .alerting }
                    let mark = node.count
                    async let decision = node.request("requestAuthorization", within: .seconds(30))
                    // The alert's pattern wins on the outputs, so the prompt shows only in the log.
                    try await daemon.waitForLog("authorization prompt: press stop")
                    try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"stop","duration":0.1}"#))
                    // The press was the sleeper's: it stopped the alarm, and the prompt waits on.
                    _ = try await node.event("stopped", alarmID: id, after: mark)
                    #expect(!node.received(after: mark).contains { message in
                        message.topic == node.topics.events && NodeClient.object(message.payload)?["event"] == .string("authorization")
                    })
                    // Now the prompt chirps and blinks, and the next press answers it.
                    try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"stop","duration":0.1}"#))
                    #expect(try await decision["authorization"] == .string("authorized"))
                }
            }
        }
    }

    @Test("Nobody answers: the prompt ends and the node stays undetermined")
    func unanswered() async throws {
        try await withPromptingDaemon { _, node in
            let reply = try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600)], within: .seconds(15))
            #expect(reply["error"]?["code"] == .string("unauthorized"))
            let list = try await node.request("list")
            #expect(list["alarms"] == .array([]))
        }
    }
}
