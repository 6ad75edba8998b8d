import FoundationEssentials

/// Stands in for ActivityKit's `AlertConfiguration`, so `AlertConfiguration.AlertSound` ports.
public enum AlertConfiguration {
    /// The sound of an alert. On a node each name maps to a buzzer pattern.
    public enum AlertSound: Sendable, Hashable, Codable {
        case `default`
        case named(String)

        private enum CodingKeys: String, CodingKey { case named }

        public init(from decoder: any Decoder) throws {
            if let word = try? decoder.singleValueContainer().decode(String.self) {
                guard word == "default" else {
                    throw decoder.dataCorrupted("'\(word)' is not a sound: use \"default\" or {\"named\":\"gentle\"}")
                }
                self = .default
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self = .named(try container.decode(String.self, forKey: .named))
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .default: try "default".encode(to: encoder)
            case .named(let name):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(name, forKey: .named)
            }
        }

        /// The sound's name: `"default"` or the named sound.
        public var name: String { if case .named(let name) = self { name } else { "default" } }
    }
}

/// A node-side action taken when an alarm's button is used; it replaces App Intents on Linux.
public enum AlarmIntent: Sendable, Hashable, Codable {
    /// Publishes an MQTT message. `{alarmID}` in the payload becomes the alarm's id.
    case publish(topic: String, payload: String, retain: Bool = false)

    private enum CodingKeys: String, CodingKey { case publish }
    private enum PublishKeys: String, CodingKey { case topic, payload, retain }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let publish = try container.superDecoder(forKey: .publish).container(keyedBy: PublishKeys.self)
        self = .publish(
            topic: try publish.decode(String.self, forKey: .topic),
            payload: try publish.decodeIfPresent(String.self, forKey: .payload) ?? "",
            retain: try publish.decodeIfPresent(Bool.self, forKey: .retain) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .publish(let topic, let payload, let retain):
            var publish = container.nestedContainer(keyedBy: PublishKeys.self, forKey: .publish)
            try publish.encode(topic, forKey: .topic)
            try publish.encode(payload, forKey: .payload)
            try publish.encode(retain, forKey: .retain)
        }
    }

    /// The payload with `{alarmID}` replaced by the alarm's id.
    public func payload(for alarmID: UUID) -> String {
        switch self {
        case .publish(_, let payload, _): payload.replacing("{alarmID}", with: alarmID.uuidString)
        }
    }
}

extension AlarmManager {
    /// Everything that configures an alarm (AlarmKit's `AlarmManager.AlarmConfiguration`).
    ///
    /// `AlarmConfiguration<JSONValue>` is the node's type-erased form, with the metadata as raw JSON.
    public struct AlarmConfiguration<Metadata: AlarmMetadata>: Sendable, Hashable, Codable {
        @ExplicitNull public var countdownDuration: Alarm.CountdownDuration?
        @ExplicitNull public var schedule: Alarm.Schedule?
        public var attributes: AlarmAttributes<Metadata>
        @ExplicitNull public var stopIntent: AlarmIntent?
        @ExplicitNull public var secondaryIntent: AlarmIntent?
        public var sound: AlertConfiguration.AlertSound

        public init(
            countdownDuration: Alarm.CountdownDuration? = nil,
            schedule: Alarm.Schedule? = nil,
            attributes: AlarmAttributes<Metadata>,
            stopIntent: AlarmIntent? = nil,
            secondaryIntent: AlarmIntent? = nil,
            sound: AlertConfiguration.AlertSound = .default
        ) {
            self.countdownDuration = countdownDuration
            self.schedule = schedule
            self.attributes = attributes
            self.stopIntent = stopIntent
            self.secondaryIntent = secondaryIntent
            self.sound = sound
        }

        /// An alarm that alerts on a schedule.
        public static func alarm(
            schedule: Alarm.Schedule? = nil,
            attributes: AlarmAttributes<Metadata>,
            stopIntent: AlarmIntent? = nil,
            secondaryIntent: AlarmIntent? = nil,
            sound: AlertConfiguration.AlertSound = .default
        ) -> Self {
            Self(schedule: schedule, attributes: attributes, stopIntent: stopIntent,
                 secondaryIntent: secondaryIntent, sound: sound)
        }

        /// A timer: a countdown of `duration` seconds that starts now, then alerts.
        /// Its repeat (snooze) counts the same duration again.
        public static func timer(
            duration: TimeInterval,
            attributes: AlarmAttributes<Metadata>,
            stopIntent: AlarmIntent? = nil,
            secondaryIntent: AlarmIntent? = nil,
            sound: AlertConfiguration.AlertSound = .default
        ) -> Self {
            Self(countdownDuration: .init(preAlert: duration, postAlert: nil), attributes: attributes,
                 stopIntent: stopIntent, secondaryIntent: secondaryIntent, sound: sound)
        }

        /// The same configuration with the metadata as raw JSON, as the node keeps it.
        public func erased() throws -> AlarmConfiguration<JSONValue> {
            let metadata = try attributes.metadata.map { try JSONValue(encoding: $0) }
            return .init(
                countdownDuration: countdownDuration, schedule: schedule,
                attributes: .init(presentation: attributes.presentation, metadata: metadata,
                                  tintColor: attributes.tintColor),
                stopIntent: stopIntent, secondaryIntent: secondaryIntent, sound: sound)
        }

        /// Reads a configuration; in strict mode (commands), a field it does not know is an error.
        public init(from decoder: any Decoder) throws {
            try self.init(fields: decoder)
            try decoder.rejectUnknownFields(notWrittenBy: self)
        }

        /// Reads the fields of a configuration, ignoring any others (a whole alarm document's).
        init(fields decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            countdownDuration = try container.decodeOptional(Alarm.CountdownDuration.self, forKey: .countdownDuration)
            schedule = try container.decodeOptional(Alarm.Schedule.self, forKey: .schedule)
            attributes = try container.decode(AlarmAttributes<Metadata>.self, forKey: .attributes)
            stopIntent = try container.decodeOptional(AlarmIntent.self, forKey: .stopIntent)
            secondaryIntent = try container.decodeOptional(AlarmIntent.self, forKey: .secondaryIntent)
            sound = try container.decodeOptional(AlertConfiguration.AlertSound.self, forKey: .sound) ?? .default
        }
    }

    /// Whether this node lets apps schedule alarms (AlarmKit's per-app consent).
    public enum AuthorizationState: String, Sendable, Hashable, Codable { case notDetermined, denied, authorized }
}

/// What a device shows for an alarm right now (AlarmKit's `AlarmPresentationState`).
public struct AlarmPresentationState: Sendable, Hashable, Codable {
    public var alarmID: UUID
    public var mode: Mode

    public init(alarmID: UUID, mode: Mode) {
        self.alarmID = alarmID
        self.mode = mode
    }

    /// The presentation mode and what a countdown display needs to render it.
    public enum Mode: Sendable, Hashable, Codable {
        case alert(Alert)
        case countdown(Countdown)
        case paused(Paused)

        public struct Alert: Sendable, Hashable {
            public var time: Alarm.Schedule.Relative.Time
            public init(time: Alarm.Schedule.Relative.Time) { self.time = time }
        }

        public struct Countdown: Sendable, Hashable {
            public var totalCountdownDuration: TimeInterval
            public var previouslyElapsedDuration: TimeInterval
            public var startDate: Date
            public var fireDate: Date

            public init(totalCountdownDuration: TimeInterval, previouslyElapsedDuration: TimeInterval,
                        startDate: Date, fireDate: Date) {
                self.totalCountdownDuration = totalCountdownDuration
                self.previouslyElapsedDuration = previouslyElapsedDuration
                self.startDate = startDate
                self.fireDate = fireDate
            }
        }

        public struct Paused: Sendable, Hashable, Codable {
            public var totalCountdownDuration: TimeInterval
            public var previouslyElapsedDuration: TimeInterval

            public init(totalCountdownDuration: TimeInterval, previouslyElapsedDuration: TimeInterval) {
                self.totalCountdownDuration = totalCountdownDuration
                self.previouslyElapsedDuration = previouslyElapsedDuration
            }
        }

        private enum CodingKeys: String, CodingKey {
            case mode, time, totalCountdownDuration, previouslyElapsedDuration, startDate, fireDate
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let mode = try container.decode(String.self, forKey: .mode)
            switch mode {
            case "alert":
                self = .alert(.init(time: try container.decode(Alarm.Schedule.Relative.Time.self, forKey: .time)))
            case "countdown":
                self = .countdown(.init(
                    totalCountdownDuration: try container.decode(TimeInterval.self, forKey: .totalCountdownDuration),
                    previouslyElapsedDuration: try container.decode(TimeInterval.self, forKey: .previouslyElapsedDuration),
                    startDate: try container.decodeDate(forKey: .startDate),
                    fireDate: try container.decodeDate(forKey: .fireDate)))
            case "paused":
                self = .paused(try Paused(from: decoder))
            default:
                throw DecodingError.dataCorruptedError(
                    forKey: .mode, in: container,
                    debugDescription: "'\(mode)' is not a presentation mode: alert, countdown or paused")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .alert(let alert):
                try container.encode("alert", forKey: .mode)
                try container.encode(alert.time, forKey: .time)
            case .countdown(let countdown):
                try container.encode("countdown", forKey: .mode)
                try container.encode(countdown.totalCountdownDuration, forKey: .totalCountdownDuration)
                try container.encode(countdown.previouslyElapsedDuration, forKey: .previouslyElapsedDuration)
                try container.encodeDate(countdown.startDate, forKey: .startDate)
                try container.encodeDate(countdown.fireDate, forKey: .fireDate)
            case .paused(let paused):
                try container.encode("paused", forKey: .mode)
                try paused.encode(to: encoder)
            }
        }
    }

    private enum CodingKeys: String, CodingKey { case alarmID }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        alarmID = try container.decode(UUID.self, forKey: .alarmID)
        mode = try Mode(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(alarmID, forKey: .alarmID)
        try mode.encode(to: encoder)
    }
}
