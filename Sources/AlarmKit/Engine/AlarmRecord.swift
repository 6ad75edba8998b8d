import FoundationEssentials

/// What the engine knows of one alarm: its configuration and where it stands in its lifecycle.
/// This is what the node persists; `AlarmDocument` is what it publishes.
public struct AlarmRecord: Identifiable, Sendable, Hashable {
    public let id: UUID
    public var configuration: AlarmManager.AlarmConfiguration<JSONValue>
    public var phase: Phase
    /// For a relative schedule: the local day of the occurrence the alarm is heading for.
    public var pendingOccurrenceDay: LocalDay?
    /// For a relative schedule: the local day of the last occurrence that alerted or was missed.
    /// An occurrence on this day or before never alerts again, whatever the clock does.
    public var lastOccurrenceDay: LocalDay?
    /// The group the alarm was scheduled through (`<prefix>/groups/<group>/cmd/schedule`), if any.
    public var group: String?
    /// True from a snooze that auto-silence started until the occurrence ends or someone snoozes:
    /// auto-silence snoozes an alert nobody answers once, then stops it.
    public var silenceSnoozed: Bool

    public init(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>, phase: Phase,
                pendingOccurrenceDay: LocalDay? = nil, lastOccurrenceDay: LocalDay? = nil, group: String? = nil, silenceSnoozed: Bool = false) {
        self.id = id
        self.group = group
        self.silenceSnoozed = silenceSnoozed
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
        /// True for a snooze: the countdown after an alert, toward ringing again.
        public var isSnooze: Bool

        public init(totalCountdownDuration: TimeInterval, previouslyElapsedDuration: TimeInterval,
                    startDate: Date, fireDate: Date, isPreAlert: Bool, isSnooze: Bool = false) {
            self.totalCountdownDuration = totalCountdownDuration
            self.previouslyElapsedDuration = previouslyElapsedDuration
            self.startDate = startDate
            self.fireDate = fireDate
            self.isPreAlert = isPreAlert
            self.isSnooze = isSnooze
        }

        /// A countdown of `total` seconds of which `elapsed` have passed, counting from `start`: it
        /// ends `total - elapsed` seconds after it.
        static func starting(at start: Date, total: TimeInterval, elapsed: TimeInterval = 0, isPreAlert: Bool = false,
                             isSnooze: Bool = false) -> Self {
            Countdown(totalCountdownDuration: total, previouslyElapsedDuration: elapsed, startDate: start,
                      fireDate: start.addingTimeInterval(total - elapsed), isPreAlert: isPreAlert, isSnooze: isSnooze)
        }
    }

    /// Where an alarm stands.
    public enum Phase: Sendable, Hashable {
        /// Waiting for its alert date (its pre-alert countdown starts before it).
        case scheduled(alertDate: Date)
        case countdown(Countdown)
        /// A paused countdown; `isSnooze` for a snooze's, which resumes as a snooze.
        case paused(totalCountdownDuration: TimeInterval, previouslyElapsedDuration: TimeInterval, isSnooze: Bool = false)
        /// Alerting since `since`, for the alert that was due at `alertDate`.
        case alerting(since: Date, alertDate: Date)
    }

    public var state: Alarm.State {
        switch phase {
        case .scheduled: .scheduled
        case .countdown: .countdown
        case .paused: .paused
        case .alerting: .alerting
        }
    }

    /// When the alarm next alerts: nil while paused or alerting.
    public var nextAlertDate: Date? {
        switch phase {
        case .scheduled(let alertDate): alertDate
        case .countdown(let countdown): countdown.fireDate
        case .paused, .alerting: nil
        }
    }

    /// The order alarms are listed in: the soonest alert first, then those with none (paused,
    /// alerting); equal dates by id, in `UUID`'s own order (its bytes, which is the order of its text).
    public static func alertsSooner(_ first: AlarmRecord, _ second: AlarmRecord) -> Bool {
        (first.nextAlertDate ?? .distantFuture, first.id) < (second.nextAlertDate ?? .distantFuture, second.id)
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
}
