import FoundationEssentials
import Synchronization

/// What the engine knows of one alarm: its configuration and where it stands in its lifecycle.
/// This is what the node persists; `AlarmDocument` is what it publishes.
public struct AlarmRecord: Identifiable, Sendable, Hashable, Codable {
    public let id: UUID
    public var configuration: AlarmManager.AlarmConfiguration<JSONValue> { didSet { revision = 0 } }
    public var phase: Phase { didSet { revision = 0 } }
    /// For a relative schedule: the local day of the occurrence the alarm is heading for.
    public var pendingOccurrenceDay: LocalDay? { didSet { revision = 0 } }
    /// For a relative schedule: the local day of the last occurrence that alerted or was missed.
    /// An occurrence on this day or before never alerts again, whatever the clock does.
    public var lastOccurrenceDay: LocalDay? { didSet { revision = 0 } }

    /// Which stored version of the alarm this is: `AlarmEngine` stamps every record it stores
    /// with a number no other record in the process had, and any change to the record sets it
    /// back to 0. So two records with the same nonzero revision are the same, which lets an
    /// encoder that kept a record's bytes reuse them without comparing every field. 0: not
    /// stamped (decoded, made or changed outside the engine). Neither saved nor compared.
    public internal(set) var revision: UInt64 = 0

    private static let revisions = Atomic<UInt64>(0)

    /// Stamps the record with a new revision.
    mutating func stampRevision() {
        revision = Self.revisions.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// True when `other` is known to be this very version of the alarm without comparing it
    /// field by field: both carry the same stamp.
    public func isSameRevision(as other: AlarmRecord) -> Bool {
        revision != 0 && revision == other.revision && id == other.id
    }

    /// Equal content, whatever the revisions.
    public static func == (lhs: AlarmRecord, rhs: AlarmRecord) -> Bool {
        lhs.id == rhs.id && lhs.configuration == rhs.configuration && lhs.phase == rhs.phase
            && lhs.pendingOccurrenceDay == rhs.pendingOccurrenceDay && lhs.lastOccurrenceDay == rhs.lastOccurrenceDay
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(configuration)
        hasher.combine(phase)
        hasher.combine(pendingOccurrenceDay)
        hasher.combine(lastOccurrenceDay)
    }

    public init(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>, phase: Phase,
                pendingOccurrenceDay: LocalDay? = nil, lastOccurrenceDay: LocalDay? = nil) {
        self.id = id
        self.configuration = configuration
        self.phase = phase
        self.pendingOccurrenceDay = pendingOccurrenceDay
        self.lastOccurrenceDay = lastOccurrenceDay
    }

    /// A running countdown. `fireDate` is `startDate + totalCountdownDuration - previouslyElapsedDuration`.
    public struct Countdown: Sendable, Hashable {
        public var totalCountdownDuration: TimeInterval
        public var previouslyElapsedDuration: TimeInterval
        public var startDate: Date
        public var fireDate: Date
        /// True for the pre-alert countdown of a scheduled alarm, which ends at the scheduled
        /// wall-clock instant; false for timers and snoozes, which run on the monotonic clock.
        public var isPreAlert: Bool

        /// A countdown of `remaining` seconds out of `total`, starting at `start`.
        static func starting(at start: Date, total: TimeInterval, elapsed: TimeInterval = 0, isPreAlert: Bool = false) -> Self {
            Countdown(totalCountdownDuration: total, previouslyElapsedDuration: elapsed, startDate: start,
                      fireDate: start.addingTimeInterval(total - elapsed), isPreAlert: isPreAlert)
        }
    }

    /// Where an alarm stands.
    public enum Phase: Sendable, Hashable {
        /// Waiting for its alert date (its pre-alert countdown starts before it).
        case scheduled(alertDate: Date)
        case countdown(Countdown)
        case paused(totalCountdownDuration: TimeInterval, previouslyElapsedDuration: TimeInterval)
        /// Alerting since `since`, for the alert that was due at `alertDate`.
        case alerting(since: Date, alertDate: Date)

        public var state: Alarm.State {
            switch self {
            case .scheduled: .scheduled
            case .countdown: .countdown
            case .paused: .paused
            case .alerting: .alerting
            }
        }
    }

    public var state: Alarm.State { phase.state }

    /// When the alarm next alerts: nil while paused or alerting.
    public var nextAlertDate: Date? {
        switch phase {
        case .scheduled(let alertDate): alertDate
        case .countdown(let countdown): countdown.fireDate
        case .paused, .alerting: nil
        }
    }

    /// True while the alarm waits for its schedule's alert date: scheduled, or in its pre-alert countdown.
    public var isWaitingForSchedule: Bool {
        switch phase {
        case .scheduled: true
        case .countdown(let countdown): countdown.isPreAlert
        case .paused, .alerting: false
        }
    }

    /// True when the alarm repeats after it alerts (a weekly relative schedule).
    public var repeats: Bool {
        if case .relative(let relative) = configuration.schedule, case .weekly = relative.repeats { return true }
        return false
    }

    /// The countdown length used by snooze: `postAlert`, or `preAlert` when it is nil.
    var snoozeDuration: TimeInterval? {
        configuration.countdownDuration?.postAlert ?? configuration.countdownDuration?.preAlert
    }

    private enum CodingKeys: String, CodingKey {
        case id, configuration, phase, alertDate, totalCountdownDuration, previouslyElapsedDuration,
             startDate, fireDate, isPreAlert, since, pendingOccurrenceDay, lastOccurrenceDay
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        configuration = try container.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, forKey: .configuration)
        pendingOccurrenceDay = try container.decodeOptional(LocalDay.self, forKey: .pendingOccurrenceDay)
        lastOccurrenceDay = try container.decodeOptional(LocalDay.self, forKey: .lastOccurrenceDay)
        let phase = try container.decode(Alarm.State.self, forKey: .phase)
        switch phase {
        case .scheduled:
            self.phase = .scheduled(alertDate: try container.decodeDate(forKey: .alertDate))
        case .countdown:
            self.phase = .countdown(Countdown(
                totalCountdownDuration: try container.decode(TimeInterval.self, forKey: .totalCountdownDuration),
                previouslyElapsedDuration: try container.decode(TimeInterval.self, forKey: .previouslyElapsedDuration),
                startDate: try container.decodeDate(forKey: .startDate),
                fireDate: try container.decodeDate(forKey: .fireDate),
                isPreAlert: try container.decode(Bool.self, forKey: .isPreAlert)))
        case .paused:
            self.phase = .paused(
                totalCountdownDuration: try container.decode(TimeInterval.self, forKey: .totalCountdownDuration),
                previouslyElapsedDuration: try container.decode(TimeInterval.self, forKey: .previouslyElapsedDuration))
        case .alerting:
            self.phase = .alerting(since: try container.decodeDate(forKey: .since),
                                   alertDate: try container.decodeDate(forKey: .alertDate))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(UUIDText.string(id), forKey: .id)
        try container.encode(configuration, forKey: .configuration)
        try container.encodeIfPresent(pendingOccurrenceDay, forKey: .pendingOccurrenceDay)
        try container.encodeIfPresent(lastOccurrenceDay, forKey: .lastOccurrenceDay)
        try container.encode(phase.state, forKey: .phase)
        switch phase {
        case .scheduled(let alertDate):
            try container.encodeDate(alertDate, forKey: .alertDate)
        case .countdown(let countdown):
            try container.encode(countdown.totalCountdownDuration, forKey: .totalCountdownDuration)
            try container.encode(countdown.previouslyElapsedDuration, forKey: .previouslyElapsedDuration)
            try container.encodeDate(countdown.startDate, forKey: .startDate)
            try container.encodeDate(countdown.fireDate, forKey: .fireDate)
            try container.encode(countdown.isPreAlert, forKey: .isPreAlert)
        case .paused(let total, let elapsed):
            try container.encode(total, forKey: .totalCountdownDuration)
            try container.encode(elapsed, forKey: .previouslyElapsedDuration)
        case .alerting(let since, let alertDate):
            try container.encodeDate(since, forKey: .since)
            try container.encodeDate(alertDate, forKey: .alertDate)
        }
    }
}
