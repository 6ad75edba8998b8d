import AlarmKit
import FoundationEssentials

/// Home Assistant MQTT discovery for one node: one device with its next alarm, whether it is
/// alerting, when the soonest countdown ends, and stop and snooze buttons, available while the
/// node's status is online.
public struct HomeAssistantDiscovery: Sendable {
    /// The discovery prefix, `homeassistant` by default.
    public let prefix: String
    public let topics: NodeTopics
    public let nodeID: String
    public let version: String

    public init(prefix: String, topics: NodeTopics, nodeID: String, version: String) {
        self.prefix = prefix
        self.topics = topics
        self.nodeID = nodeID
        self.version = version
    }

    /// Home Assistant announces itself here with `online` when it (re)starts.
    public var birthTopic: String { "\(prefix)/status" }
    /// The retained state the entities read (`HomeAssistantState`).
    public var stateTopic: String { "\(topics.base)/ha/state" }
    public var stopTopic: String { "\(topics.base)/ha/stop" }
    public var snoozeTopic: String { "\(topics.base)/ha/snooze" }

    /// One entity: its component, its id within the device, and its configuration.
    public struct Entity: Sendable {
        public var component: String
        public var objectID: String
        public var configuration: [String: JSONValue]
    }

    /// The node's entities.
    public var entities: [Entity] {
        [
            Entity(component: "sensor", objectID: "next_alarm", configuration: [
                "name": .string("Next alarm"), "device_class": .string("timestamp"),
                "state_topic": .string(stateTopic), "value_template": .string("{{ value_json.nextAlarm }}"),
                "icon": .string("mdi:alarm"),
            ]),
            Entity(component: "binary_sensor", objectID: "alerting", configuration: [
                "name": .string("Alerting"), "device_class": .string("sound"),
                "state_topic": .string(stateTopic),
                "value_template": .string("{{ 'ON' if value_json.alerting else 'OFF' }}"),
                "payload_on": .string("ON"), "payload_off": .string("OFF"),
            ]),
            Entity(component: "sensor", objectID: "countdown_end", configuration: [
                "name": .string("Countdown ends"), "device_class": .string("timestamp"),
                "state_topic": .string(stateTopic), "value_template": .string("{{ value_json.countdownEnds }}"),
                "icon": .string("mdi:timer-sand"),
            ]),
            Entity(component: "button", objectID: "stop", configuration: [
                "name": .string("Stop"), "command_topic": .string(stopTopic), "payload_press": .string("PRESS"),
                "icon": .string("mdi:alarm-off"),
            ]),
            Entity(component: "button", objectID: "snooze", configuration: [
                "name": .string("Snooze"), "command_topic": .string(snoozeTopic), "payload_press": .string("PRESS"),
                "icon": .string("mdi:alarm-snooze"),
            ]),
        ]
    }

    /// Where an entity's discovery configuration goes.
    public func configTopic(of entity: Entity) -> String {
        "\(prefix)/\(entity.component)/alarmd_\(nodeID)/\(entity.objectID)/config"
    }

    /// The retained discovery messages: each entity's configuration with the device and
    /// availability filled in.
    public func configurations() -> [(topic: String, payload: JSONValue)] {
        let device: JSONValue = .object([
            "identifiers": .array([.string("alarmd_\(nodeID)")]), "name": .string("alarmd \(nodeID)"),
            "manufacturer": .string("alarmd"), "model": .string("alarm node"), "sw_version": .string(version),
        ])
        let availability: JSONValue = .array([.object([
            "topic": .string(topics.status), "value_template": .string("{{ value_json.state }}"),
            "payload_available": .string("online"), "payload_not_available": .string("offline"),
        ])])
        return entities.map { entity in
            var configuration = entity.configuration
            configuration["unique_id"] = .string("alarmd_\(nodeID)_\(entity.objectID)")
            configuration["device"] = device
            configuration["availability"] = availability
            return (configTopic(of: entity), .object(configuration))
        }
    }
}

/// What the Home Assistant entities show, published retained on `<base>/ha/state`.
public struct HomeAssistantState: Sendable, Hashable, Encodable {
    /// When the next alarm alerts (the soonest `nextAlertDate`), or nil.
    public var nextAlarm: Date?
    public var alerting: Bool
    /// When the soonest running countdown ends, or nil.
    public var countdownEnds: Date?

    /// From the engine's indexes: this runs after every change, so it must not visit every alarm.
    public init(engine: AlarmEngine) {
        nextAlarm = engine.soonestAlertDate
        alerting = engine.isAlerting
        countdownEnds = engine.soonestCountdownEnd
    }

    private enum CodingKeys: String, CodingKey { case nextAlarm, alerting, countdownEnds }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nextAlarm.map(AlarmJSON.string(from:)), forKey: .nextAlarm)
        try container.encode(alerting, forKey: .alerting)
        try container.encode(countdownEnds.map(AlarmJSON.string(from:)), forKey: .countdownEnds)
    }
}
