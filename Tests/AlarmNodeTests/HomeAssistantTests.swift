import AlarmKit
@testable import AlarmNode
import Foundation
import Testing

@Suite("Home Assistant discovery payloads")
struct HomeAssistantTests {
    let discovery = HomeAssistantDiscovery(prefix: "homeassistant", topics: NodeTopics(node: "bedroom"), nodeID: "bedroom", version: "0.1.0")

    /// The keys Home Assistant's MQTT discovery documents for each component we use (the
    /// abbreviations aside), and the ones it requires.
    static let documentedKeys: [String: (allowed: Set<String>, required: Set<String>)] = {
        let common: Set<String> = ["availability", "availability_mode", "availability_topic", "device", "enabled_by_default",
                                   "entity_category", "icon", "name", "object_id", "default_entity_id", "qos", "unique_id",
                                   "json_attributes_topic", "json_attributes_template", "payload_available",
                                   "payload_not_available", "encoding", "entity_picture", "origin"]
        return [
            "sensor": (common.union(["state_topic", "value_template", "device_class", "unit_of_measurement", "state_class",
                                     "expire_after", "force_update", "suggested_display_precision", "last_reset_value_template"]),
                       ["state_topic"]),
            "binary_sensor": (common.union(["state_topic", "value_template", "device_class", "payload_on", "payload_off",
                                            "expire_after", "force_update", "off_delay"]),
                              ["state_topic"]),
            "button": (common.union(["command_topic", "command_template", "payload_press", "retain", "device_class"]),
                       ["command_topic"]),
            "event": (common.union(["state_topic", "value_template", "event_types", "device_class"]),
                      ["state_topic", "event_types"]),
            "text": (common.union(["command_topic", "command_template", "state_topic", "value_template", "min", "max",
                                   "mode", "pattern", "retain"]),
                     ["command_topic"]),
        ]
    }()
    static let deviceKeys: Set<String> = ["identifiers", "connections", "name", "manufacturer", "model", "model_id",
                                          "sw_version", "hw_version", "serial_number", "suggested_area", "via_device",
                                          "configuration_url"]
    static let sensorDeviceClasses: Set<String> = ["timestamp", "duration", "date"]
    static let binarySensorDeviceClasses: Set<String> = ["sound", "running", "problem", "occupancy"]

    @Test("Every entity's configuration uses documented keys only, with the required ones")
    func schema() throws {
        let configurations = discovery.configurations()
        #expect(configurations.count == 12)
        for (topic, payload) in configurations {
            let component = String(topic.split(separator: "/")[1])
            let keys = try #require(Self.documentedKeys[component], "undocumented component \(component)")
            guard case .object(let object) = payload else { Issue.record("not an object"); continue }
            #expect(Set(object.keys).isSubset(of: keys.allowed), "\(topic): \(Set(object.keys).subtracting(keys.allowed))")
            #expect(keys.required.isSubset(of: Set(object.keys)), "\(topic) lacks \(keys.required)")
            guard case .object(let device)? = object["device"] else { Issue.record("\(topic) has no device"); continue }
            #expect(Set(device.keys).isSubset(of: Self.deviceKeys))
            if component == "sensor", case .string(let deviceClass)? = object["device_class"] {
                #expect(Self.sensorDeviceClasses.contains(deviceClass))
            }
            if component == "binary_sensor", case .string(let deviceClass)? = object["device_class"] {
                #expect(Self.binarySensorDeviceClasses.contains(deviceClass))
            }
            #expect(object["qos"] == .number(1), "\(topic)")
            #expect(object["origin"] == .object(["name": .string("alarmd"), "sw_version": .string("0.1.0")]))
            // The availability follows the node's status.
            #expect(object["availability"] == .array([.object([
                "topic": .string("alarmd/bedroom/status"), "value_template": .string("{{ value_json.state }}"),
                "payload_available": .string("online"), "payload_not_available": .string("offline"),
            ])]))
            #expect(topic.hasPrefix("homeassistant/\(component)/alarmd_bedroom/") && topic.hasSuffix("/config"))
        }
        // One device for the node: the same identifiers everywhere; unique ids are unique.
        let identifiers = Set(configurations.map { $0.payload["device"]?["identifiers"] })
        #expect(identifiers.count == 1)
        #expect(identifiers.first.flatMap { $0 } != nil)
        let uniqueIDs = configurations.compactMap { $0.payload["unique_id"] }
        #expect(uniqueIDs.count == configurations.count)
        #expect(Set(uniqueIDs).count == uniqueIDs.count)
    }

    @Test("The state shows the next alarm, alerting and the soonest countdown's end")
    func state() throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        var engine = AlarmEngine()
        let empty = HomeAssistantState(engine: engine)
        #expect(empty.nextAlarm == nil && !empty.alerting && empty.countdownEnds == nil)
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(
            title: "T")), tintColor: .blue)
        _ = try engine.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes), now: now)
        _ = try engine.schedule(id: UUID(), configuration: .alarm(schedule: .fixed(now + 300), attributes: attributes), now: now)
        var state = HomeAssistantState(engine: engine)
        #expect(state.nextAlarm == now + 300 && state.countdownEnds == now + 600 && !state.alerting)
        _ = engine.advance(to: now + 300)
        state = HomeAssistantState(engine: engine)
        #expect(state.alerting && state.nextAlarm == now + 600)
        let json = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(state))
        #expect(json["nextAlarm"] == .string(AlarmJSON.string(from: now + 600)))
    }
}

@Suite("Home Assistant entities: events, alarms, the text entity, diagnostics")
struct HomeAssistantEntityTests {
    let discovery = HomeAssistantDiscovery(prefix: "homeassistant", topics: NodeTopics(node: "bedroom"), nodeID: "bedroom", version: "0.1.0")
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func configuration(_ objectID: String) throws -> [String: JSONValue] {
        try #require(discovery.entities.first { $0.objectID == objectID }).configuration
    }

    @Test("The event entity reads the node's events and declares every event name")
    func eventEntity() throws {
        let events = try configuration("events")
        #expect(events["state_topic"] == .string("alarmd/bedroom/events"))
        guard case .array(let types)? = events["event_types"] else { Issue.record("no event_types"); return }
        #expect(types == AlarmEvent.Name.allCases.map { .string($0.rawValue) })
        for name in ["alerting", "stopped", "snoozed", "silenced", "missed", "button"] {
            #expect(types.contains(.string(name)), "\(name)")
        }
    }

    @Test("Diagnostics read the status; the ringing entity has no microphone's words")
    func diagnostics() throws {
        for objectID in ["clock_synchronized", "authorization", "time_zone"] {
            let entity = try configuration(objectID)
            #expect(entity["entity_category"] == .string("diagnostic"))
            #expect(entity["state_topic"] == .string("alarmd/bedroom/status"))
        }
        let ringing = try configuration("alerting")
        #expect(ringing["name"] == .string("Ringing"))
        #expect(ringing["device_class"] == nil)
    }

    @Test("The alarms list: every alarm, soonest first, with title, state, next date and repeats")
    func alarmList() throws {
        var engine = AlarmEngine()
        let tea = UUID(), work = UUID()
        _ = try engine.schedule(id: tea, configuration: try RequestLine(parsing: "10m Tea").configuration(in: .gmt), now: now)
        _ = try engine.schedule(id: work, configuration: try RequestLine(parsing: "07:00 weekdays Work").configuration(in: .gmt), now: now)
        let list = HomeAssistantAlarmList(engine: engine)
        #expect(list.alarms.map(\.id) == [tea, work])
        #expect(list.alarms[0].title == "Tea" && list.alarms[0].state == .countdown && list.alarms[0].next == now + 600)
        #expect(list.alarms[0].repeats == nil)
        #expect(list.alarms[1].title == "Work" && list.alarms[1].repeats == "weekdays")
        #expect(HomeAssistantState(engine: engine).alarms == 2)
        let json = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(list))
        guard case .array(let entries)? = json["alarms"] else { Issue.record("no alarms array"); return }
        #expect(entries.first?["id"] == .string(tea.uuidString))
        #expect(entries.first?["next"] == .string(AlarmJSON.string(from: now + 600)))
        #expect(entries.first?["repeats"] == .null && entries.first?["remaining"] == .null)
        // Paused a minute in: the time left, for a dashboard.
        _ = try engine.pause(id: tea, now: now + 60)
        let paused = HomeAssistantAlarmList(engine: engine).alarms.first { $0.id == tea }
        #expect(paused?.state == .paused && paused?.remaining == 540 && paused?.next == nil)
    }

    @Test("Alarms that alert at the same instant, or not at all, are listed in the order of their id's text")
    func alarmListTies() throws {
        var engine = AlarmEngine()
        // Six of each: ids in scheduling order would pass by chance once in 720² runs.
        let ids = (0..<12).map { _ in UUID() }
        for (index, id) in ids.enumerated() {
            _ = try engine.schedule(id: id, configuration: try RequestLine(parsing: index < 6 ? "08:00 Same" : "5m Timer").configuration(in: .gmt), now: now)
            if index >= 6 { _ = try engine.pause(id: id, now: now) }
        }
        let listed = HomeAssistantAlarmList(engine: engine).alarms.map(\.id.uuidString)
        #expect(listed.prefix(6) == ids.prefix(6).map(\.uuidString).sorted()[...])
        #expect(listed.suffix(6) == ids.suffix(6).map(\.uuidString).sorted()[...])
    }

    @Test("The text entity's state: what was scheduled, or the error, within Home Assistant's 255 characters")
    func scheduleResult() throws {
        var engine = AlarmEngine()
        let id = UUID()
        _ = try engine.schedule(id: id, configuration: try RequestLine(parsing: "10m Tea").configuration(in: .gmt), now: now)
        let document = try #require(engine.document(for: id))
        let scheduled = HomeAssistantScheduleResult.scheduled("10m Tea", document, timeZone: try #require(TimeZone(identifier: "Europe/Berlin")))
        #expect(scheduled.state == "scheduled: Tea at 2026-11-18T12:16:40+01:00", "in the node's zone, as typed")
        #expect(scheduled.alarmID == id && scheduled.error == nil)
        #expect(HomeAssistantScheduleResult.scheduled("10m Tea", document, timeZone: .gmt).state == "scheduled: Tea at 2026-11-18T11:16:40Z")
        let exam = UUID()
        _ = try engine.schedule(id: exam, configuration: try RequestLine(parsing: "07:00 Sat exam").configuration(in: .gmt), now: now)
        let weekly = HomeAssistantScheduleResult.scheduled("07:00 Sat exam", try #require(engine.document(for: exam)), timeZone: .gmt)
        #expect(weekly.state == "scheduled: exam at 2026-11-21T07:00:00Z, repeats sat", "a day word read where a title was meant shows")
        let cancelled = HomeAssistantScheduleResult.cancelled("cancel work", "work", ids: [id, UUID()])
        #expect(cancelled.state == "cancelled: work (2 alarms)" && cancelled.alarmID == nil && cancelled.error == nil)
        let message = "'10x' is not a duration, a time of day or a date: \(RequestLine.acceptedForms)"
        let refused = HomeAssistantScheduleResult.refused("10x Tea", message: message)
        #expect(refused.state.hasPrefix("error: '10x' is not a duration"))
        #expect(refused.state.unicodeScalars.count <= HomeAssistantDiscovery.textMaximum)
        #expect(refused.error == message)
        #expect(throws: HumanSyntaxError.unreadable(message)) { try RequestLine(parsing: "10x Tea") }
    }
}
