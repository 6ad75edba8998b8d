import FoundationEssentials

/// An alarm as the node publishes it on `<base>/alarms/<id>` (docs/mqtt.md): its configuration,
/// state, what a display needs to render it, and when it next alerts.
public struct AlarmDocument: Identifiable, Sendable, Hashable, Codable {
    public var id: UUID
    public var state: Alarm.State
    public var configuration: AlarmManager.AlarmConfiguration<JSONValue>
    public var presentationState: AlarmPresentationState.Mode?
    /// When the alarm next alerts; `nil` while it is paused or alerting.
    public var nextAlertDate: Date?
    /// The group the alarm was scheduled through; absent for an alarm scheduled on the node itself.
    public var group: String?

    public init(id: UUID, state: Alarm.State, configuration: AlarmManager.AlarmConfiguration<JSONValue>,
                presentationState: AlarmPresentationState.Mode?, nextAlertDate: Date?, group: String? = nil) {
        self.id = id
        self.group = group
        self.state = state
        self.configuration = configuration
        self.presentationState = presentationState
        self.nextAlertDate = nextAlertDate
    }

    /// The alarm in AlarmKit's shape.
    public var alarm: Alarm {
        Alarm(id: id, schedule: configuration.schedule, countdownDuration: configuration.countdownDuration, state: state)
    }

    private enum CodingKeys: String, CodingKey { case id, state, presentationState, nextAlertDate, group }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        state = try container.decode(Alarm.State.self, forKey: .state)
        configuration = try AlarmManager.AlarmConfiguration<JSONValue>(fields: decoder)
        presentationState = try container.decodeOptional(AlarmPresentationState.Mode.self, forKey: .presentationState)
        nextAlertDate = try container.decode(OptionalInstant.self, forKey: .nextAlertDate).wrappedValue
        group = try container.decodeIfPresent(String.self, forKey: .group)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(state, forKey: .state)
        try configuration.encode(to: encoder)
        try container.encodeOrNull(presentationState, forKey: .presentationState)
        try container.encodeDate(nextAlertDate, forKey: .nextAlertDate)
        try container.encodeIfPresent(group, forKey: .group)
    }
}

extension UUID {
    /// Whether `text` is this id or a start of it, in any case, with or without hyphens: how
    /// people copy an id (alarmctl shows its first 8 characters).
    public func starts(withIDText text: String) -> Bool {
        let wanted = text.uppercased().filter { $0 != "-" }
        return !wanted.isEmpty && wanted.allSatisfy(\.isHexDigit) && uuidString.filter { $0 != "-" }.hasPrefix(wanted)
    }
}
