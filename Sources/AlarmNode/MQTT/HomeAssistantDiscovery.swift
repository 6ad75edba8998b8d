import AlarmKit
import FoundationEssentials

/// Home Assistant MQTT discovery for one node (docs/home-assistant.md): one device with its next
/// alarm, whether one rings, the soonest countdown's end, its alarms, its events, a text entity
/// that schedules from human syntax, stop, snooze and cancel-timers buttons, and diagnostics;
/// available while the node's status is online.
public struct HomeAssistantDiscovery: Sendable {
    /// The discovery prefix, `homeassistant` by default.
    public let prefix: String
    public let topics: NodeTopics
    public let nodeID: String
    public let version: String

    /// Home Assistant announces itself here with `online` when it (re)starts.
    public var birthTopic: String { "\(prefix)/status" }
    /// The retained state the sensors read (``HomeAssistantState``).
    public var stateTopic: String { "\(topics.base)/ha/state" }
    /// The retained list of alarms, the alarms sensor's attributes (``HomeAssistantAlarmList``).
    public var alarmsTopic: String { "\(topics.base)/ha/alarms" }
    /// The retained outcome of the last line written to the text entity (``HomeAssistantScheduleResult``).
    public var scheduleResultTopic: String { "\(topics.base)/ha/schedule-result" }
    public var stopTopic: String { "\(topics.base)/ha/stop" }
    public var snoozeTopic: String { "\(topics.base)/ha/snooze" }
    public var cancelTimersTopic: String { "\(topics.base)/ha/cancel-timers" }
    /// Where the text entity sends what was typed: `10m Tea`, `07:00 weekdays Work`.
    public var scheduleTopic: String { "\(topics.base)/ha/schedule" }
    /// The topics the node subscribes to for Home Assistant.
    public var commandTopics: [String] { [birthTopic, stopTopic, snoozeTopic, cancelTimersTopic, scheduleTopic] }

    /// One entity: its component, its id within the device, and its configuration.
    public struct Entity: Sendable {
        public var component: String
        public var objectID: String
        public var configuration: [String: JSONValue]
    }

    /// The longest state a text entity may have in Home Assistant.
    public static let textMaximum = 255

    /// The node's entities.
    public var entities: [Entity] {
        func sensor(_ objectID: String, _ configuration: [String: JSONValue]) -> Entity {
            Entity(component: "sensor", objectID: objectID, configuration: configuration)
        }
        func button(_ objectID: String, _ name: String, _ topic: String, icon: String) -> Entity {
            Entity(component: "button", objectID: objectID, configuration: [
                "name": .string(name), "command_topic": .string(topic), "payload_press": .string("PRESS"), "icon": .string(icon),
            ])
        }
        func diagnostic(_ component: String, _ objectID: String, _ name: String, _ template: String, icon: String) -> Entity {
            Entity(component: component, objectID: objectID, configuration: [
                "name": .string(name), "entity_category": .string("diagnostic"), "state_topic": .string(topics.status),
                "value_template": .string(template), "icon": .string(icon),
            ])
        }
        return [
            sensor("next_alarm", [
                "name": .string("Next alarm"), "device_class": .string("timestamp"),
                "state_topic": .string(stateTopic), "value_template": .string("{{ value_json.nextAlarm }}"),
                "icon": .string("mdi:alarm"),
            ]),
            // No device class: `sound` would show "Detected" and "Clear", which suit a microphone.
            Entity(component: "binary_sensor", objectID: "alerting", configuration: [
                "name": .string("Ringing"), "state_topic": .string(stateTopic),
                "value_template": .string("{{ 'ON' if value_json.alerting else 'OFF' }}"),
                "payload_on": .string("ON"), "payload_off": .string("OFF"), "icon": .string("mdi:alarm-bell"),
            ]),
            sensor("countdown_end", [
                "name": .string("Countdown ends"), "device_class": .string("timestamp"),
                "state_topic": .string(stateTopic), "value_template": .string("{{ value_json.countdownEnds }}"),
                "icon": .string("mdi:timer-sand"),
            ]),
            sensor("alarms", [
                "name": .string("Alarms"), "state_topic": .string(stateTopic), "value_template": .string("{{ value_json.alarms }}"),
                "json_attributes_topic": .string(alarmsTopic), "icon": .string("mdi:alarm-multiple"),
            ]),
            Entity(component: "event", objectID: "events", configuration: [
                "name": .string("Events"), "state_topic": .string(topics.events),
                "event_types": .array(AlarmEvent.Name.allCases.map { .string($0.rawValue) }),
                // Home Assistant reads the type from `event_type`; the event's other fields become attributes.
                "value_template": .string("{{ dict(value_json, event_type=value_json.event) | to_json }}"),
                "icon": .string("mdi:bell-ring"),
            ]),
            Entity(component: "text", objectID: "schedule", configuration: [
                "name": .string("Schedule"), "command_topic": .string(scheduleTopic),
                "state_topic": .string(scheduleResultTopic), "value_template": .string("{{ value_json.state }}"),
                "json_attributes_topic": .string(scheduleResultTopic), "max": .number(Double(Self.textMaximum)),
                "icon": .string("mdi:alarm-plus"),
            ]),
            button("stop", "Stop", stopTopic, icon: "mdi:alarm-off"),
            button("snooze", "Snooze", snoozeTopic, icon: "mdi:alarm-snooze"),
            button("cancel_timers", "Cancel all timers", cancelTimersTopic, icon: "mdi:timer-off"),
            // The offline status has none of these fields: `None` leaves the state unknown.
            diagnostic("binary_sensor", "clock_synchronized", "Clock synchronized",
                       "{{ 'None' if value_json.clockSynchronized is not defined else ('ON' if value_json.clockSynchronized else 'OFF') }}",
                       icon: "mdi:clock-check"),
            diagnostic("sensor", "authorization", "Authorization", "{{ value_json.authorization | default(None) }}",
                       icon: "mdi:shield-check"),
            diagnostic("sensor", "time_zone", "Time zone", "{{ value_json.timeZone | default(None) }}", icon: "mdi:earth"),
        ]
    }

    /// The retained discovery messages: each entity's configuration with the device, the origin,
    /// QoS 1 and the availability filled in, on `<prefix>/<component>/alarmd_<node>/<object id>/config`.
    public func configurations() -> [(topic: String, payload: JSONValue)] {
        let device: JSONValue = .object([
            "identifiers": .array([.string("alarmd_\(nodeID)")]), "name": .string("alarmd \(nodeID)"),
            "manufacturer": .string("alarmd"), "model": .string("alarm clock"), "sw_version": .string(version),
        ])
        let origin: JSONValue = .object(["name": .string("alarmd"), "sw_version": .string(version)])
        let availability: JSONValue = .array([.object([
            "topic": .string(topics.status), "value_template": .string("{{ value_json.state }}"),
            "payload_available": .string("online"), "payload_not_available": .string("offline"),
        ])])
        return entities.map { entity in
            let configuration = entity.configuration.merging([
                "unique_id": .string("alarmd_\(nodeID)_\(entity.objectID)"), "device": device, "origin": origin,
                "availability": availability, "qos": .number(1),
            ]) { $1 }
            return ("\(prefix)/\(entity.component)/alarmd_\(nodeID)/\(entity.objectID)/config", .object(configuration))
        }
    }
}
