import AlarmKit
import AlarmNode
import Foundation
import Mosquitto
import MosquittoTestSupport
import Testing

/// The real alarmd against a real mosquitto: the MQTT contract of docs/mqtt.md. The time limit (per
/// test) only turns a hang into a failure instead of stalling CI; no test comes near it.
@Suite("alarmd over MQTT", .serialized, .timeLimit(.minutes(3)))
struct DaemonMQTTTests {
    private func id(of reply: [String: JSONValue]) throws -> UUID {
        guard case .string(let text)? = reply["alarm"]?["id"], let id = UUID(uuidString: text) else {
            throw TestSupportError("no alarm in reply \(reply)")
        }
        return id
    }

    @Test("Status is retained online; schedule publishes the document, events and a reply")
    func scheduleTimer() async throws {
        try await withDaemon { _, _, node in
            let status = try await node.waitForMessage("online status") { message in
                message.topic == node.topics.status && NodeClient.object(message.payload)?["state"] == .string("online")
            }
            let statusObject = NodeClient.object(status.payload)!
            #expect(statusObject["version"] == .string(AlarmdVersion.current))
            #expect(statusObject["timeZone"] == .string("Europe/Berlin"))
            #expect(statusObject["authorization"] == .string("authorized"))

            let alarmID = UUID()
            let reply = try await node.request("schedule", ["id": .string(alarmID.uuidString.lowercased()),
                                                            "configuration": configurationJSON(preAlert: 600, postAlert: 300)])
            #expect(reply["ok"] == .bool(true))
            #expect(try id(of: reply) == alarmID)
            #expect(reply["alarm"]?["state"] == .string("countdown"))
            let document = try await node.document(alarmID) { $0.state == .countdown }
            #expect(document.configuration.countdownDuration == .init(preAlert: 600, postAlert: 300))
            guard case .countdown(let countdown)? = document.presentationState else {
                Issue.record("no countdown presentation")
                return
            }
            #expect(countdown.totalCountdownDuration == 600)
            #expect(document.nextAlertDate == countdown.fireDate)
            _ = try await node.event("scheduled", alarmID: alarmID)
            _ = try await node.event("countdown", alarmID: alarmID)
            try await node.waitForMessage("status with one alarm") { message in
                message.topic == node.topics.status && NodeClient.object(message.payload)?["alarms"] == .number(1)
            }
        }
    }

    @Test("Every lifecycle operation: pause, resume, alert, snooze, alert again, stop, cancel")
    func lifecycle() async throws {
        try await withDaemon { _, _, node in
            // Pause and resume a long countdown: however slow the machine, it cannot alert in between.
            let long = try self.id(of: try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600)]))
            let paused = try await node.request("pause", ["id": .string(long.uuidString)])
            #expect(paused["alarm"]?["state"] == .string("paused"))
            #expect(paused["alarm"]?["presentationState"]?["mode"] == .string("paused"))
            let resumed = try await node.request("resume", ["id": .string(long.uuidString)])
            #expect(resumed["alarm"]?["state"] == .string("countdown"))

            // A short one to alert, snooze, alert again and stop.
            let id = try self.id(of: try await node.request("schedule", ["configuration": configurationJSON(preAlert: 1, postAlert: 1)]))
            let alerting = try await node.event("alerting", alarmID: id)
            #expect(alerting["late"] != nil)
            let buzzerOn = try await node.waitForMessage("buzzer on") { message in
                message.topic == node.topics.simulatedOutputs && NodeClient.object(message.payload)?["buzzer"] == .bool(true)
            }
            // The line's wall-clock stamp: after the alert began (the event's `at`, to the ms), not in the future.
            guard case .number(let realtime)? = NodeClient.object(buzzerOn.payload)?["realtime"],
                  case .string(let text)? = alerting["at"], let alertedAt = AlarmJSON.date(from: text) else {
                throw TestSupportError("no `realtime` on sim/outputs or no `at` on the event")
            }
            let lineSet = Date(timeIntervalSince1970: realtime / 1e9)
            #expect(lineSet >= alertedAt.addingTimeInterval(-0.001) && lineSet <= Date(), "\(lineSet) vs \(alertedAt)")
            let mark = node.count
            let snoozed = try await node.request("countdown", ["id": .string(id.uuidString)])
            #expect(snoozed["alarm"]?["state"] == .string("countdown"))
            let snoozedEvent = try await node.event("snoozed", alarmID: id, after: mark)
            #expect(snoozedEvent["source"] == .string("command"))
            let alertingAgain = try await node.event("alerting", alarmID: id, after: mark)
            #expect(alertingAgain["source"] == nil, "time causes an alert, not anyone")

            let stopped = try await node.request("stop", ["id": .string(id.uuidString)])
            #expect(stopped == ["ok": .bool(true), "alarm": .null, "correlationID": stopped["correlationID"]!])
            try await node.waitForMessage("cleared retained document") { $0.topic == node.topics.alarm(id) && $0.payload.isEmpty }

            let cancelled = try await node.request("cancel", ["id": .string(long.uuidString)])
            #expect(cancelled["ok"] == .bool(true))
            _ = try await node.event("cancelled", alarmID: long)
            let list = try await node.request("list")
            #expect(list["alarms"] == .array([]))
        }
    }

    @Test("Replies go to the MQTT v5 response topic with the correlation data")
    func v5Replies() async throws {
        try await withDaemon { _, _, node in
            let (reply, correlation) = try await node.requestV5("list", payload: [])
            #expect(reply == ["ok": .bool(true), "alarms": .array([])])
            #expect(correlation != nil)
            let (failure, _) = try await node.requestV5("stop", payload: Array(#"{"id":"\#(UUID().uuidString)"}"#.utf8))
            #expect(failure["error"]?["code"] == .string("notFound"))
        }
    }

    @Test("No reply goes where a node's own messages go: its status, its events, a node's commands")
    func repliesNeverOnNodeTopics() async throws {
        try await withDaemon { _, _, node in
            let mark = node.count
            let own = [node.topics.status, node.topics.events, node.topics.simulatedOutputs]
            for topic in own + ["\(node.topics.base)/cmd/list"] {
                try node.client.publish(MQTTMessage(topic: "\(node.topics.base)/cmd/list", string: #"{"replyTo":"\#(topic)"}"#, qos: 1))
            }
            // Answered in the order sent: once this reply came, the node has handled the others.
            _ = try await node.request("list")
            let misplaced = node.received(after: mark).filter { message in
                (own + ["\(node.topics.base)/cmd/list"]).contains(message.topic) && NodeClient.object(message.payload)?["ok"] != nil
            }
            #expect(misplaced.map(\.topic) == [])
        }
    }

    @Test("Malformed commands get an error reply naming the problem, and change nothing")
    func malformedCommands() async throws {
        try await withDaemon { _, daemon, node in
            let kept = try self.id(of: try await node.request("schedule", ["configuration": configurationJSON(preAlert: 600)]))
            let before = try await node.request("list")
            let valid = configurationJSON(preAlert: 60)
            func with(_ key: String, _ value: JSONValue, in configuration: JSONValue = valid) -> JSONValue {
                guard case .object(var object) = configuration else { return configuration }
                object[key] = value
                return .object(object)
            }
            let cases: [(String, [String: JSONValue], String, String?)] = [
                ("schedule", [:], "badRequest", "configuration"),
                ("schedule", ["configuration": .string("tea")], "badRequest", "configuration"),
                ("schedule", ["id": .string("not-a-uuid"), "configuration": valid], "badRequest", "id"),
                ("schedule", ["configuration": valid, "colour": .string("red")], "badRequest", "colour"),
                ("schedule", ["configuration": with("countdownDuration", .object(["preAlert": .string("NaN")]))], "badRequest",
                 "configuration.countdownDuration.preAlert"),
                ("schedule", ["configuration": with("countdownDuration", .object(["preAlert": .number(0)]))], "invalidConfiguration",
                 "configuration.countdownDuration.preAlert"),
                ("schedule", ["configuration": with("countdownDuration", .object(["preAlert": .number(60), "snooze": .number(1)]))],
                 "badRequest", "configuration.countdownDuration.snooze"),
                ("schedule", ["configuration": with("schedule", .object(["relative": .object([
                    "time": .object(["hour": .number(7), "minute": .number(0)]), "repeats": .object(["weekly": .array([.string("mondy")])]),
                ])]))], "badRequest", "configuration.schedule.relative.repeats.weekly[0]"),
                ("schedule", ["configuration": with("schedule", .object(["fixed": .string("2001-01-01T00:00:00Z")]))],
                 "invalidConfiguration", "configuration.schedule.fixed"),
                ("schedule", ["configuration": with("attributes", .string("x"))], "badRequest", "configuration.attributes"),
                ("stop", [:], "badRequest", "id"),
                ("stop", ["id": .number(5)], "badRequest", "id"),
                ("stop", ["id": .string(UUID().uuidString)], "notFound", nil),
                ("resume", ["id": .string(kept.uuidString)], "invalidState", nil),
                ("reboot", [:], "badRequest", nil),
            ]
            for (operation, fields, code, field) in cases {
                let reply = try await node.request(operation, fields)
                #expect(reply["ok"] == .bool(false), "\(operation) \(fields)")
                #expect(reply["error"]?["code"] == .string(code), "\(operation) \(fields): \(reply)")
                if let field { #expect(reply["error"]?["field"] == .string(field), "\(operation) \(fields): \(reply)") }
                // Every refusal names the problem: a reply without a message fails here too.
                guard case .string(let message)? = reply["error"]?["message"] else {
                    Issue.record("\(operation) \(fields): no error message in \(reply)")
                    continue
                }
                #expect(!message.isEmpty, "\(operation) \(fields): \(reply)")
            }
            // Payloads that are not JSON objects at all, answered through v5 properties.
            for payload in ["{", "[1,2]", "\"text\"", String(repeating: "x", count: 70_000)] {
                let (reply, _) = try await node.requestV5("schedule", payload: Array(payload.utf8))
                #expect(reply["error"]?["code"] == .string("badRequest"), "\(payload.prefix(20)): \(reply)")
            }
            let (binary, _) = try await node.requestV5("schedule", payload: [0xFF, 0xFE, 0x00, 0x7B])
            #expect(binary["error"]?["code"] == .string("badRequest"))

            let after = try await node.request("list")
            #expect(after["alarms"] == before["alarms"])
            #expect(daemon.isRunning)
        }
    }

    @Test("The simulated buttons: a stop press silences the buzzer and is reported, its edges stamped on sim/buttons")
    func simulatedStopPress() async throws {
        try await withDaemon { _, _, node in
            let id = try self.id(of: try await node.request("schedule", ["configuration": configurationJSON(preAlert: 1)]))
            _ = try await node.event("alerting", alarmID: id)
            let mark = node.count
            try node.client.publish(MQTTMessage(topic: node.topics.simulatedPress, string: #"{"button":"stop","duration":0.1}"#))
            let button = try await node.event("button", after: mark)
            #expect(button["button"] == .string("stop") && button["press"] == .string("short"))
            let stopped = try await node.event("stopped", alarmID: id, after: mark)
            #expect(stopped["source"] == .string("button"))
            // Buzzer and LED off: nothing alerts any more (the sound's own pattern turns the
            // buzzer off between beeps, with the LED still lit).
            let off = try await node.waitForMessage("buzzer and LED off", after: mark) { message in
                message.topic == node.topics.simulatedOutputs && NodeClient.object(message.payload)?["buzzer"] == .bool(false)
                    && NodeClient.object(message.payload)?["led"] == .bool(false)
            }
            // The daemon's own stamps (nanoseconds): pressed, released 0.1 s later, and the buzzer
            // off no sooner than the 30 ms debounce window after the release.
            func edge(_ pressed: Bool) async throws -> Double {
                let message = try await node.waitForMessage("stop \(pressed ? "pressed" : "released") on sim/buttons", after: mark) { message in
                    message.topic == node.topics.simulatedButtons && NodeClient.object(message.payload)?["button"] == .string("stop")
                        && NodeClient.object(message.payload)?["pressed"] == .bool(pressed)
                }
                return try Self.stamp(message)
            }
            // The press is reported before what it did.
            let events = node.received(after: mark).filter { $0.topic == node.topics.events }
                .compactMap { NodeClient.object($0.payload)?["event"] }
            #expect(events.firstIndex(of: .string("button")).map { button in
                events.firstIndex(of: .string("stopped")).map { button < $0 } ?? false
            } == true, "events in order: \(events)")
            let pressedAt = try await edge(true), releasedAt = try await edge(false), offAt = try Self.stamp(off)
            #expect(releasedAt - pressedAt >= 100_000_000, "held for the press's 0.1 s")
            #expect(offAt - releasedAt >= 30_000_000, "recognised once the debounce window passed")
        }
    }

    /// The `at` of a simulation message, in nanoseconds.
    static func stamp(_ message: MQTTMessage) throws -> Double {
        guard case .number(let at)? = NodeClient.object(message.payload)?["at"] else {
            throw TestSupportError("no `at` in \(message.payloadString ?? "<binary>")")
        }
        return at
    }

    @Test("A stale retained alarm topic is cleared at start")
    func staleRetainedCleared() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let node = "stale-\(UUID().uuidString.prefix(6))"
                let stale = UUID()
                let publisher = try await NodeClient.connect(broker: broker, node: node, clients: clients)
                try publisher.client.publish(MQTTMessage(topic: publisher.topics.alarm(stale), string: #"{"id":"x"}"#, qos: 1, retain: true))
                try await publisher.waitForMessage("the stale document") { $0.topic == publisher.topics.alarm(stale) }
                try await withDaemonProcess(broker: broker, node: node) { _ in
                    try await publisher.waitForMessage("the stale topic cleared") {
                        $0.topic == publisher.topics.alarm(stale) && $0.payload.isEmpty
                    }
                }
            }
        }
    }

    /// The node subscribes to its alarm topics with No Local, so that its own documents do not
    /// come back to it; the broker must still hand it the retained ones of its earlier run.
    @Test("A retained document of the node's own earlier run is cleared when that run's state is gone")
    func ownEarlierDocumentCleared() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let node = "own-\(UUID().uuidString.prefix(6))"
                let observer = try await NodeClient.connect(broker: broker, node: node, clients: clients)
                // Each run has a state folder of its own: the second starts with no alarms.
                let id: UUID = try await withDaemonProcess(broker: broker, node: node) { _ in
                    try await observer.waitForMessage("the node online") { message in
                        message.topic == observer.topics.status && NodeClient.object(message.payload)?["state"] == .string("online")
                    }
                    let id = try self.id(of: try await observer.request("schedule", ["configuration": configurationJSON(preAlert: 600)]))
                    _ = try await observer.document(id) { $0.state == .countdown }
                    return id
                }
                let mark = observer.count
                try await withDaemonProcess(broker: broker, node: node) { _ in
                    try await observer.waitForMessage("the earlier run's document cleared", after: mark) {
                        $0.topic == observer.topics.alarm(id) && $0.payload.isEmpty
                    }
                }
            }
        }
    }
}

@Suite("alarmd and Home Assistant", .serialized, .timeLimit(.minutes(3)))
struct HomeAssistantDaemonTests {
    @Test("Discovery: twelve retained entities, re-announced when Home Assistant comes online; its stop button stops")
    func discovery() async throws {
        try await withDaemon { _, daemon, node in
            let prefix = "homeassistant/+/alarmd_\(daemon.node)/+/config"
            try node.client.subscribe(prefix, qos: 1)
            try node.client.subscribe("homeassistant/status", qos: 1)
            // The entities (docs/home-assistant.md) by component and object id, written out here
            // rather than taken from the daemon's code, so that a missing, renamed or extra one fails.
            let entities = [("sensor", "next_alarm"), ("binary_sensor", "alerting"), ("sensor", "countdown_end"),
                            ("sensor", "alarms"), ("event", "events"), ("text", "schedule"),
                            ("button", "stop"), ("button", "snooze"), ("button", "cancel_timers"),
                            ("binary_sensor", "clock_synchronized"), ("sensor", "authorization"), ("sensor", "time_zone")]
            let expected = Set(entities.map { "homeassistant/\($0)/alarmd_\(daemon.node)/\($1)/config" })
            for (component, objectID) in entities {
                let topic = "homeassistant/\(component)/alarmd_\(daemon.node)/\(objectID)/config"
                let message = try await node.waitForMessage("configuration of \(objectID)") { $0.topic == topic && !$0.payload.isEmpty }
                #expect(NodeClient.object(message.payload)?["unique_id"] == .string("alarmd_\(daemon.node)_\(objectID)"), "\(topic)")
            }
            // Retained: subscribed again, the broker sends every configuration it keeps, flagged
            // retained; our own message published after that subscription comes back after them.
            let resubscribed = node.count
            try node.client.subscribe(prefix, qos: 1)
            for topic in expected {
                try await node.waitForMessage("retained \(topic)", after: resubscribed) { $0.topic == topic && $0.retain }
            }
            try node.client.publish(MQTTMessage(topic: "home/discovery-barrier", string: "after the retained configurations", qos: 1))
            try await node.waitForMessage("barrier message", after: resubscribed) { $0.topic == "home/discovery-barrier" }
            let retained = node.received(after: resubscribed).filter { $0.retain && MQTTClient.topic($0.topic, matches: prefix) }
            #expect(Set(retained.map(\.topic)) == expected, "the broker keeps exactly the twelve configurations")
            let mark = node.count
            try node.client.publish(MQTTMessage(topic: "homeassistant/status", string: "online"))
            try await node.waitForMessage("a re-announcement", after: mark) { MQTTClient.topic($0.topic, matches: prefix) }

            let id = UUID()
            _ = try await node.request("schedule", ["id": .string(id.uuidString), "configuration": configurationJSON(preAlert: 1)])
            try await node.waitForMessage("alerting state for Home Assistant") {
                $0.topic == "\(node.topics.base)/ha/state" && NodeClient.object($0.payload)?["alerting"] == .bool(true)
            }
            try node.client.publish(MQTTMessage(topic: "\(node.topics.base)/ha/stop", string: "PRESS"))
            let stopped = try await node.event("stopped", alarmID: id)
            #expect(stopped["source"] == .string("home-assistant"))
        }
    }

    @Test("The text entity schedules from human syntax and shows errors; Cancel all timers cancels as home-assistant")
    func textEntityAndCancel() async throws {
        try await withDaemon { _, _, node in
            let base = node.topics.base
            try node.client.subscribe("\(base)/ha/#", qos: 1)
            try node.client.publish(MQTTMessage(topic: "\(base)/ha/schedule", string: "10m Tea", qos: 1))
            let scheduled = try await node.event("scheduled")
            #expect(scheduled["source"] == .string("home-assistant"))
            let result = try await node.waitForMessage("the text entity's result") {
                $0.topic == "\(base)/ha/schedule-result" && NodeClient.object($0.payload)?["input"] == .string("10m Tea")
            }
            let object = try #require(NodeClient.object(result.payload))
            #expect(object["alarmID"] == scheduled["alarmID"] && object["error"] == .null)
            guard case .string(let state)? = object["state"] else { Issue.record("no state"); return }
            #expect(state.hasPrefix("scheduled: Tea at "))
            let list = try await node.waitForMessage("the alarms list") { $0.topic == "\(base)/ha/alarms" && $0.payload.count > 20 }
            guard case .array(let alarms)? = NodeClient.object(list.payload)?["alarms"] else { Issue.record("no alarms list"); return }
            #expect(alarms.first?["title"] == .string("Tea") && alarms.first?["state"] == .string("countdown"))

            let mark = node.count
            try node.client.publish(MQTTMessage(topic: "\(base)/ha/schedule", string: "10x Tea", qos: 1))
            let refused = try await node.waitForMessage("the text entity's error", after: mark) {
                $0.topic == "\(base)/ha/schedule-result" && NodeClient.object($0.payload)?["input"] == .string("10x Tea")
            }
            guard case .string(let error)? = NodeClient.object(refused.payload)?["state"] else { Issue.record("no state"); return }
            #expect(error.hasPrefix("error: '10x' is not a duration") && error.contains("10m Tea"))

            try node.client.publish(MQTTMessage(topic: "\(base)/ha/cancel-timers", string: "PRESS", qos: 1))
            guard case .string(let idText)? = scheduled["alarmID"], let id = UUID(uuidString: idText) else {
                Issue.record("no alarmID in \(scheduled)")
                return
            }
            let cancelled = try await node.event("cancelled", alarmID: id)
            #expect(cancelled["source"] == .string("home-assistant"))
            let reply = try await node.request("list")
            #expect(reply["alarms"] == .array([]))
        }
    }

    @Test("The text entity cancels by title or id, or the start of an id, in the order lines arrive: cancel, then the same alarm again")
    func textEntityCancels() async throws {
        try await withDaemon { _, _, node in
            let base = node.topics.base
            try node.client.subscribe("\(base)/ha/schedule-result", qos: 1)
            func write(_ line: String) async throws -> String {
                let mark = node.count
                try node.client.publish(MQTTMessage(topic: "\(base)/ha/schedule", string: line, qos: 1))
                let result = try await node.waitForMessage("the result of '\(line)'", after: mark) {
                    $0.topic == "\(base)/ha/schedule-result" && NodeClient.object($0.payload)?["input"] == .string(line)
                }
                guard case .string(let state)? = NodeClient.object(result.payload)?["state"] else { return "" }
                return state
            }
            for line in ["07:00 Work", "07:00 Work", "10m Tea"] { _ = try await write(line) }
            // Written back to back, as an automation's two actions: the cancel must not see the new alarm.
            let mark = node.count
            try node.client.publish(MQTTMessage(topic: "\(base)/ha/schedule", string: "cancel  work ", qos: 1))
            #expect(try await write("07:00 weekdays Work").hasPrefix("scheduled: Work at "))
            let cancelResult = try await node.waitForMessage("the cancel's result", after: mark) {
                $0.topic == "\(base)/ha/schedule-result" && NodeClient.object($0.payload)?["input"] == .string("cancel  work ")
            }
            #expect(NodeClient.object(cancelResult.payload)?["state"] == .string("cancelled: Work (2 alarms)"), "the alarms' title, not as typed")
            guard case .array(let alarms)? = try await node.request("list")["alarms"] else { Issue.record("no alarms"); return }
            #expect(alarms.count == 2, "Tea and the new Work: \(alarms)")
            let work = try #require(alarms.first { $0["schedule"] != .null })
            #expect(work["schedule"]?["relative"]?["repeats"]?["weekly"] != nil)
            guard case .string(let teaID)? = alarms.first(where: { $0["id"] != work["id"] })?["id"] else { Issue.record("no Tea"); return }
            #expect(try await write("cancel \(teaID.prefix(3))").hasPrefix("error: '\(teaID.prefix(3))' is too short for an id"),
                    "3 characters are too few to stand for an id")
            #expect(try await write("cancel \(teaID.prefix(8).lowercased())") == "cancelled: Tea", "by id, as alarmctl shows it: the title shows what went")
            #expect(try await write("cancel Nothing").hasPrefix("error: no alarm has the title or id 'Nothing'"))
            #expect(try await write("cancel").hasPrefix("error: cancel needs an alarm: write cancel and a title or an id"))
            guard case .array(let left)? = try await node.request("list")["alarms"] else { Issue.record("no alarms"); return }
            #expect(left.count == 1)
        }
    }

    @Test("With discovery off, entities announced before are removed")
    func discoveryOff() async throws {
        try await withConfiguredNode("ha", configuration: "[home-assistant]\ndiscovery = false\n") { broker, node, nodeName, config, directory in
            let entity = "homeassistant/sensor/alarmd_\(nodeName)/next_alarm/config"
            try node.client.subscribe("homeassistant/#", qos: 1)
            // An entity announced by an earlier run with discovery on.
            try node.client.publish(MQTTMessage(topic: entity, string: #"{"name":"Next alarm"}"#, qos: 1, retain: true))
            try await node.waitForMessage("the old entity") { $0.topic == entity && !$0.payload.isEmpty }
            let daemon = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: directory,
                                                       arguments: ["--config", config.path])
            do {
                try await node.waitForMessage("the entity removed") { $0.topic == entity && $0.payload.isEmpty }
            } catch {
                print("alarmd log:\n\(daemon.log)")
                await daemon.cleanUp()
                throw error
            }
            await daemon.cleanUp()
        }
    }
}
