import FoundationEssentials

/// Something the node reports on `<base>/events` (docs/mqtt.md).
public struct AlarmEvent: Sendable, Hashable, Codable {
    public enum Name: String, Sendable, Hashable, Codable, CaseIterable {
        case scheduled, countdown, paused, resumed, alerting, stopped, snoozed, cancelled
        case silenced, missed, intent, button, authorization
    }

    public var name: Name
    public var alarmID: UUID?
    public var at: Date
    /// The event's other fields, e.g. `late` for `alerting`, `button` and `press` for `button`.
    public var details: [String: JSONValue]

    /// Who caused a lifecycle event, in its `source` field.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable {
        /// A physical or simulated button on the node.
        case button
        /// An MQTT command: alarmctl, the companion, any client (and the in-process manager).
        case command
        /// A Home Assistant entity (its buttons, its text entity).
        case homeAssistant = "home-assistant"
        /// The node's auto-silence, when nobody acted on an alert.
        case silence
    }

    /// The lifecycle events someone causes, which carry a `source`: all but `alerting`, which time causes.
    public static let causedLifecycle: Set<Name> = [.scheduled, .countdown, .paused, .resumed, .stopped, .snoozed, .cancelled]

    public init(_ name: Name, alarmID: UUID?, at: Date, details: [String: JSONValue] = [:]) {
        self.name = name
        self.alarmID = alarmID
        self.at = at
        self.details = details
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        name = try container.decode(Name.self, forKey: AnyCodingKey(stringValue: "event"))
        alarmID = try container.decodeOptional(UUID.self, forKey: AnyCodingKey(stringValue: "alarmID"))
        at = try container.decodeDate(forKey: AnyCodingKey(stringValue: "at"))
        details = [:]
        for key in container.allKeys where !["event", "alarmID", "at"].contains(key.stringValue) {
            details[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try container.encode(name, forKey: AnyCodingKey(stringValue: "event"))
        try container.encodeOrNull(alarmID, forKey: AnyCodingKey(stringValue: "alarmID"))
        try container.encodeDate(at, forKey: AnyCodingKey(stringValue: "at"))
        for (key, value) in details { try container.encode(value, forKey: AnyCodingKey(stringValue: key)) }
    }
}

/// What should happen after the engine changed: the engine decides, the node carries it out.
public enum AlarmEffect: Sendable, Hashable {
    /// The alarm changed: persist it and publish its document.
    case changed(AlarmDocument)
    /// The alarm is gone: persist that and clear its retained topic.
    case removed(UUID)
    /// Publish an event.
    case event(AlarmEvent)
    /// Carry out a node-side intent for this alarm.
    case runIntent(AlarmIntent, alarmID: UUID)
    /// The alarm started alerting with this sound: the buzzer sounds.
    case alertStarted(UUID, sound: AlertConfiguration.AlertSound)
    /// The alarm stopped alerting.
    case alertEnded(UUID)
}

extension Array where Element == AlarmEffect {
    /// The effects with `source` set on the lifecycle events someone causes, except those that
    /// name theirs already (the auto-silence's, carried out while a command was applied).
    public func caused(by source: AlarmEvent.Source) -> [AlarmEffect] {
        map { effect in
            guard case .event(var event) = effect, AlarmEvent.causedLifecycle.contains(event.name), event.details["source"] == nil else {
                return effect
            }
            event.details["source"] = .string(source.rawValue)
            return .event(event)
        }
    }

    /// True when the effects change what the node must keep on disk.
    public var changesState: Bool {
        contains { effect in
            switch effect {
            case .changed, .removed: true
            default: false
            }
        }
    }
}
