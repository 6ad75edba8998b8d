import FoundationEssentials
import OrderedCollections

/// The node's settings that shape the lifecycle.
public struct EngineConfiguration: Sendable, Hashable {
    /// What auto-silence does to an alarm nobody acted on.
    public enum SilenceAction: String, Sendable, Hashable, Codable, CaseIterable {
        /// Acts as `stop`.
        case stop
        /// Acts as `countdown` (snooze) when the alarm has a snooze duration, else as `stop`.
        case countdown
    }

    /// Alarms a node holds at most.
    public var maximumAlarms: Int
    /// How long an alarm alerts with nobody acting before it is silenced.
    public var alertTimeout: TimeInterval
    public var silenceAction: SilenceAction
    /// How late a missed alert may still sound; later ones are reported as `missed`. Below
    /// ``wakeTolerance`` it counts as that: an alert the node reaches on time is never missed.
    public var missedAlarmGrace: TimeInterval
    /// Lateness that no grace makes an alert missed: what waking takes on a busy board.
    public static let wakeTolerance: TimeInterval = 5
    var missedAfter: TimeInterval { max(missedAlarmGrace, Self.wakeTolerance) }
    /// The zone that relative schedules are read in.
    public var timeZone: TimeZone
    /// Where intents may publish; nil (a node in the app's own process, with no broker
    /// identity to lend) lets them publish anywhere.
    public var intentTopics: IntentTopics?

    public init(maximumAlarms: Int = 100, alertTimeout: TimeInterval = 600, silenceAction: SilenceAction = .stop,
                missedAlarmGrace: TimeInterval = 900, timeZone: TimeZone = .current, intentTopics: IntentTopics? = nil) {
        self.maximumAlarms = maximumAlarms
        self.alertTimeout = alertTimeout
        self.silenceAction = silenceAction
        self.missedAlarmGrace = missedAlarmGrace
        self.timeZone = timeZone
        self.intentTopics = intentTopics
    }
}

/// The lifecycle of docs/mqtt.md as a pure state machine.
///
/// Every operation takes the current instant, changes the alarms, and returns the effects the
/// node must carry out (persist and publish, events, intents, the buzzer). Nothing here reads a
/// clock, sleeps or does I/O, so every transition is testable without waiting.
public struct AlarmEngine: Sendable {
    /// Fixed once the engine exists (a change would leave deadlines computed under the old one
    /// stale); the time zone changes only through `changeTimeZone(to:now:)`.
    public internal(set) var configuration: EngineConfiguration
    /// The alarms, in the order they were first scheduled.
    public private(set) var records: OrderedDictionary<UUID, AlarmRecord>
    /// False while the wall clock may be wrong (not yet synchronized after boot): alerts that
    /// look later than the grace are then held, neither sounded nor declared missed, until
    /// `setClockTrusted(true, now:)`.
    public private(set) var isClockTrusted = true
    /// The alarms held while the clock is not trusted.
    public private(set) var heldAlarms: Set<UUID> = []
    /// The alarms restored while the clock was not trusted, unchanged since: their countdown and
    /// alert dates were written under the clock of before the restart, so a step (the clock being
    /// put right after boot) does not move them.
    private var restoredUnderUntrustedClock: Set<UUID> = []
    /// The alarms stored or removed since ``takeChangedAlarms()`` last ran: what a write of the
    /// state must look at (every change to an alarm passes through here, whatever its effects).
    public private(set) var changedAlarms: Set<UUID> = []
    /// When an alert last ended (stopped, snoozed, silenced, cancelled or replaced): a snooze press
    /// just after it was meant for that alert (``ButtonActions``).
    public private(set) var lastAlertEnd: Date?

    public init(configuration: EngineConfiguration = .init(), records: [AlarmRecord] = [], clockTrusted: Bool = true) {
        self.configuration = configuration
        self.records = OrderedDictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
        self.isClockTrusted = clockTrusted
        if !clockTrusted { restoredUnderUntrustedClock = Set(self.records.keys) }
    }

    /// Stores an alarm. A changed alarm is no longer held: its new deadline is looked at again
    /// (and held again if it too is past the grace).
    private mutating func store(_ record: AlarmRecord) { setRecord(record.id, record) }

    private mutating func setRecord(_ id: UUID, _ record: AlarmRecord?) {
        records[id] = record
        heldAlarms.remove(id)
        restoredUnderUntrustedClock.remove(id)
        changedAlarms.insert(id)
    }

    /// Returns ``changedAlarms`` and empties it: the node calls this as it hands a state to its writer.
    public mutating func takeChangedAlarms() -> Set<UUID> {
        defer { changedAlarms = [] }
        return changedAlarms
    }

    /// The alarm whose deadline (when `advance` must next look at it) is soonest, held ones
    /// aside; ties go to the smaller id.
    private var soonestDeadline: (date: Date, id: UUID)? {
        records.values.lazy
            .filter { !self.heldAlarms.contains($0.id) }
            .compactMap { record in Self.deadline(of: record, alertTimeout: self.configuration.alertTimeout).map { ($0, record.id) } }
            .min { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
    }

    // MARK: Reading

    /// Every alarm's document, in scheduling order.
    public var documents: [AlarmDocument] { records.values.map(document(for:)) }

    public func document(for id: UUID) -> AlarmDocument? { records[id].map(document(for:)) }

    /// The published form of a record.
    public func document(for record: AlarmRecord) -> AlarmDocument {
        let presentation: AlarmPresentationState.Mode? = switch record.phase {
        case .scheduled: nil
        case .countdown(let countdown):
            .countdown(.init(totalCountdownDuration: countdown.totalCountdownDuration,
                             previouslyElapsedDuration: countdown.previouslyElapsedDuration,
                             startDate: countdown.startDate, fireDate: countdown.fireDate))
        case .paused(let total, let elapsed, _): .paused(.init(totalCountdownDuration: total, previouslyElapsedDuration: elapsed))
        case .alerting(_, let alertDate): .alert(.init(time: alertTime(of: record, alertDate: alertDate)))
        }
        return AlarmDocument(id: record.id, state: record.state, configuration: record.configuration,
                             presentationState: presentation, nextAlertDate: record.nextAlertDate, group: record.group)
    }

    /// The next instant at which `advance(to:)` has something to do, or nil when nothing is due.
    public var nextDeadline: Date? { soonestDeadline?.date }

    /// The alarms alerting now with their sounds, oldest alert first.
    /// Ties (alarms that began alerting at the same instant) come in scheduling order.
    public var alerting: [(id: UUID, sound: AlertConfiguration.AlertSound, since: Date)] {
        let alerting = records.values.compactMap { record -> (id: UUID, sound: AlertConfiguration.AlertSound, since: Date)? in
            guard case .alerting(let since, _) = record.phase else { return nil }
            return (record.id, record.configuration.sound, since)
        }
        // A stable sort keeps scheduling order among equal instants.
        return alerting.enumerated().sorted { ($0.element.since, $0.offset) < ($1.element.since, $1.offset) }.map(\.element)
    }

    /// True when at least one countdown is running.
    public var hasRunningCountdown: Bool { records.values.contains { $0.state == .countdown } }

    // MARK: Operations (docs/mqtt.md, "Lifecycle")

    /// How far a requester's `sentAt` may lie ahead of the node's clock and still be used: the
    /// clocks of machines kept by NTP agree within milliseconds; beyond this the requester's clock is wrong.
    public static let sentAtSkewAllowance: TimeInterval = 1
    /// How old a requester's `sentAt` may be and still be used: a broker delivers within
    /// milliseconds; a command this late was held up (a member cut off), and counts from its arrival.
    public static let sentAtMaximumAge: TimeInterval = 10

    /// The instant a countdown started by a command counts from: the requester's `sentAt` (when it
    /// sent the command, docs/mqtt.md) when it lies between ``sentAtMaximumAge`` before `now` and
    /// ``sentAtSkewAllowance`` after it, else `now`. Every member of a group that receives the
    /// one command thus counts from the same instant, however long the broker took to reach each.
    public static func countdownOrigin(sentAt: Date?, now: Date) -> Date {
        guard let sentAt else { return now }
        let age = now.timeIntervalSince(sentAt)
        return age <= sentAtMaximumAge && age >= -sentAtSkewAllowance ? sentAt : now
    }

    /// Schedules, or replaces, the alarm `id`. Scheduling an identical configuration again
    /// changes nothing, so a duplicated delivery never restarts a countdown.
    ///
    /// - Parameters:
    ///   - group: the group it was scheduled through, kept in its document.
    ///   - sentAt: when the requester sent the command; a timer counts from it (``countdownOrigin(sentAt:now:)``).
    /// - Throws: `AlarmManager.AlarmError.maximumLimitReached` when the node is full, or an
    ///   ``AlarmNodeError`` (`invalidConfiguration`, also for an intent outside `intentTopics`).
    public mutating func schedule(
        id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>, group: String? = nil, now: Date, sentAt: Date? = nil
    ) throws -> [AlarmEffect] {
        if let existing = records[id], existing.configuration == configuration, existing.group == group { return [] }
        try configuration.validate(now: now)
        if let refused = self.configuration.intentTopics?.refusals(in: configuration).first {
            throw AlarmNodeError.invalidConfiguration(field: refused.field, reason: refused.reason)
        }
        guard records[id] != nil || records.count < self.configuration.maximumAlarms else {
            throw AlarmManager.AlarmError.maximumLimitReached
        }
        var effects: [AlarmEffect] = []
        if case .alerting? = records[id]?.phase { effects.append(endAlert(id, now: now)) }

        let phase: AlarmRecord.Phase
        var occurrenceDay: LocalDay?
        switch configuration.schedule {
        case nil:
            // A timer: validation guarantees a preAlert.
            phase = .countdown(.starting(at: Self.countdownOrigin(sentAt: sentAt, now: now),
                                         total: configuration.countdownDuration?.preAlert ?? 0))
        case .fixed(let date)?: phase = scheduledPhase(alertDate: date, configuration: configuration, now: now)
        case .relative(let relative)?:
            guard let next = ScheduleMath.nextOccurrence(of: relative, after: now, in: self.configuration.timeZone) else {
                throw AlarmNodeError.invalidConfiguration(field: "configuration.schedule", reason: "never occurs")
            }
            occurrenceDay = next.day
            phase = scheduledPhase(alertDate: next.date, configuration: configuration, now: now)
        }
        let record = AlarmRecord(id: id, configuration: configuration, phase: phase, pendingOccurrenceDay: occurrenceDay, group: group)
        effects.append(.event(AlarmEvent(.scheduled, alarmID: id, at: now)))
        return effects + replace(nil, with: record, now: now) + advance(to: now)
    }

    /// Carries out a lifecycle operation on an existing alarm. `sentAt` (when the requester sent
    /// it) is where a snooze or a resumed countdown starts and where a pause stops the countdown.
    public mutating func perform(_ operation: AlarmOperation, id: UUID, now: Date, sentAt: Date? = nil) throws(AlarmNodeError) -> [AlarmEffect] {
        switch operation {
        case .cancel: try cancel(id: id, now: now)
        case .stop: try stop(id: id, now: now)
        case .countdown: try countdown(id: id, now: now, sentAt: sentAt)
        case .pause: try pause(id: id, now: now, sentAt: sentAt)
        case .resume: try resume(id: id, now: now, sentAt: sentAt)
        }
    }

    /// Removes the alarm in any state, repeating or not.
    public mutating func cancel(id: UUID, now: Date) throws(AlarmNodeError) -> [AlarmEffect] {
        let alertEnded: [AlarmEffect] = try existing(id).state == .alerting ? [endAlert(id, now: now)] : []
        setRecord(id, nil)
        return alertEnded + [.event(AlarmEvent(.cancelled, alarmID: id, at: now)), .removed(id)]
    }

    /// Stops an alerting alarm: a one-shot alarm is removed, a repeating one waits for its next occurrence.
    /// Runs the alarm's stop intent.
    public mutating func stop(id: UUID, now: Date) throws(AlarmNodeError) -> [AlarmEffect] {
        let record = try existing(id, in: .alerting, for: "stop")
        return [endAlert(id, now: now)] + stopped(record, now: now)
    }

    /// Ends a snooze as a stop ends an alert (the stop button while nothing alerts): a one-shot
    /// alarm is removed, a repeating one waits for its next occurrence; runs the stop intent.
    public mutating func endSnooze(id: UUID, now: Date) throws(AlarmNodeError) -> [AlarmEffect] {
        let record = try existing(id, in: .countdown, for: "ending a snooze")
        guard case .countdown(let countdown) = record.phase, countdown.isSnooze else {
            throw .invalidState("alarm \(id.uuidString) counts down, but not a snooze: cancel or pause it instead")
        }
        return stopped(record, now: now)
    }

    private mutating func stopped(_ record: AlarmRecord, now: Date) -> [AlarmEffect] {
        var effects: [AlarmEffect] = [.event(AlarmEvent(.stopped, alarmID: record.id, at: now))]
        if let intent = record.configuration.stopIntent { effects += intentEffects(intent, record: record, now: now) }
        return effects + finishOccurrence(of: record, now: now)
    }

    /// Snoozes an alerting alarm (or repeats a timer): a countdown of `postAlert`, else `preAlert`,
    /// from `sentAt` within the bounds of ``countdownOrigin(sentAt:now:)``.
    public mutating func countdown(id: UUID, now: Date, sentAt: Date? = nil) throws(AlarmNodeError) -> [AlarmEffect] {
        let record = try existing(id, in: .alerting, for: "countdown (snooze)")
        guard let duration = record.configuration.snoozeDuration else {
            throw .invalidState("alarm \(id.uuidString) has neither a postAlert nor a preAlert duration, so it cannot count down again: stop it instead")
        }
        return [endAlert(id, now: now), .event(AlarmEvent(.snoozed, alarmID: id, at: now))]
            + startCountdown(record, duration: duration, from: Self.countdownOrigin(sentAt: sentAt, now: now), now: now)
    }

    /// Pauses a running countdown, keeping the time elapsed until `sentAt` (within the bounds of
    /// ``countdownOrigin(sentAt:now:)``), else until now.
    public mutating func pause(id: UUID, now: Date, sentAt: Date? = nil) throws(AlarmNodeError) -> [AlarmEffect] {
        var record = try existing(id, in: .countdown, for: "pause")
        guard case .countdown(let countdown) = record.phase else { return [] }
        let pausedAt = Self.countdownOrigin(sentAt: sentAt, now: now)
        let elapsed = countdown.previouslyElapsedDuration + max(0, pausedAt.timeIntervalSince(countdown.startDate))
        record.phase = .paused(totalCountdownDuration: countdown.totalCountdownDuration,
                               previouslyElapsedDuration: min(elapsed, countdown.totalCountdownDuration), isSnooze: countdown.isSnooze)
        store(record)
        return [.event(AlarmEvent(.paused, alarmID: id, at: now)), .changed(document(for: record))]
    }

    /// Resumes a paused countdown for its remaining time, from `sentAt` within the bounds of
    /// ``countdownOrigin(sentAt:now:)``.
    public mutating func resume(id: UUID, now: Date, sentAt: Date? = nil) throws(AlarmNodeError) -> [AlarmEffect] {
        var record = try existing(id, in: .paused, for: "resume")
        guard case .paused(let total, let elapsed, let isSnooze) = record.phase else { return [] }
        record.phase = .countdown(.starting(at: Self.countdownOrigin(sentAt: sentAt, now: now), total: total, elapsed: elapsed, isSnooze: isSnooze))
        store(record)
        return [.event(AlarmEvent(.resumed, alarmID: id, at: now)), .changed(document(for: record))]
    }

    /// What the alert's secondary button does: `.countdown` snoozes, `.custom` runs the
    /// secondary intent and leaves the state as it is. An alarm with no secondary button ignores it.
    public mutating func secondaryAction(id: UUID, now: Date) throws(AlarmNodeError) -> [AlarmEffect] {
        let record = try existing(id, in: .alerting, for: "the secondary action")
        switch record.configuration.attributes.presentation.alert.secondaryButtonBehavior {
        case .countdown?: return try countdown(id: id, now: now)
        case .custom?: return record.configuration.secondaryIntent.map { intentEffects($0, record: record, now: now) } ?? []
        case nil: return []
        }
    }

    // MARK: Time passing

    /// Carries out everything due at or before `now`: pre-alert countdowns start, alarms alert
    /// (or are reported missed past the grace), alerts nobody acted on are silenced.
    public mutating func advance(to now: Date) -> [AlarmEffect] {
        var effects: [AlarmEffect] = []
        // Each step moves one alarm forward; the bound only guards against a logic error looping.
        for _ in 0..<(2 * records.count + 4) {
            guard let soonest = soonestDeadline, soonest.date <= now, let due = records[soonest.id] else { break }
            if !isClockTrusted, let date = due.nextAlertDate, now.timeIntervalSince(date) > configuration.missedAfter {
                heldAlarms.insert(due.id)
                continue
            }
            effects += step(due, now: now)
        }
        return effects
    }

    /// Trusts the wall clock again (it is synchronized, or the bound on waiting passed), or not.
    /// Trusting it carries out the held alerts: late within the grace, or missed.
    public mutating func setClockTrusted(_ trusted: Bool, now: Date) -> [AlarmEffect] {
        isClockTrusted = trusted
        guard trusted else { return [] }
        heldAlarms = []
        restoredUnderUntrustedClock = []
        return advance(to: now)
    }

    /// After a restart: alarms that were alerting and are still inside their alert timeout
    /// sound again. Call before the first `advance`, which silences the others.
    public func resumeAlerts(now: Date) -> [AlarmEffect] {
        records.values.flatMap { record -> [AlarmEffect] in
            guard case .alerting(let since, let alertDate) = record.phase, now < since + configuration.alertTimeout else { return [] }
            let late = (max(0, now.timeIntervalSince(alertDate)) * 1000).rounded() / 1000
            return [.event(AlarmEvent(.alerting, alarmID: record.id, at: now, details: ["late": .number(late), "restored": .bool(true)])),
                    .alertStarted(record.id, sound: record.configuration.sound)]
        }
    }

    /// The wall clock was stepped by `offset` seconds (positive: forwards) without time passing.
    ///
    /// Timers, snoozes and alerts run on the monotonic clock, so they move with the step and keep
    /// their remaining time, except those restored while the clock was not trusted (their dates
    /// were right before the restart). Scheduled alarms keep their wall-clock instants: after a
    /// forward step, `advance` finds skipped alerts and treats them as missed; after a backward
    /// step relative schedules are computed again, and an occurrence that already alerted never
    /// alerts again. Held alerts are looked at again: after a step back, one may be due ahead.
    public mutating func wallClockStepped(by offset: TimeInterval, now: Date) -> [AlarmEffect] {
        var effects: [AlarmEffect] = []
        heldAlarms = []
        for var record in records.values {
            let before = record
            let keepsDates = restoredUnderUntrustedClock.contains(record.id)
            switch record.phase {
            case .countdown(var countdown) where !countdown.isPreAlert:
                guard !keepsDates else { break }
                countdown.startDate += offset
                countdown.fireDate += offset
                record.phase = .countdown(countdown)
            case .alerting(let since, let alertDate):
                guard !keepsDates else { break }
                record.phase = .alerting(since: since + offset, alertDate: alertDate + offset)
            case .scheduled, .countdown:
                if offset < 0, case .relative = record.configuration.schedule {
                    record = rescheduled(record, after: now)
                } else if case .countdown(let countdown) = record.phase {
                    record.phase = scheduledPhase(alertDate: countdown.fireDate, configuration: record.configuration, now: now)
                }
            case .paused: break
            }
            if record != before { effects += replace(before, with: record, now: now) }
        }
        return effects + advance(to: now)
    }

    /// After a restart: saved in another zone (`savedIn`), relative schedules move as on a change of
    /// zone (``changeTimeZone(to:now:)``); else each keeps its local day, at its time in the node's
    /// zone (whose rules may have changed), and one then past is decided by the next `advance`, as
    /// any alarm that fell due while the node was down. Call before that first `advance`.
    public mutating func replanInTimeZone(now: Date, savedIn savedZone: TimeZone? = nil) -> [AlarmEffect] {
        if let savedZone, savedZone != configuration.timeZone {
            let zone = configuration.timeZone
            configuration.timeZone = savedZone
            return readInTimeZone(zone, now: now, atStart: true)
        }
        var effects: [AlarmEffect] = []
        for record in records.values where record.isWaitingForSchedule {
            guard case .relative(let relative) = record.configuration.schedule, let day = record.pendingOccurrenceDay else { continue }
            let alertDate = ScheduleMath.instant(of: relative.time, on: day, in: configuration.timeZone)
            guard alertDate != record.nextAlertDate else { continue }
            var replanned = record
            replanned.phase = scheduledPhase(alertDate: alertDate, configuration: record.configuration, now: now)
            effects += replace(record, with: replanned, now: now)
        }
        return effects
    }

    /// The node's time zone changed: relative schedules are read again in the new zone. The day
    /// that last alerted becomes the new zone's last day whose occurrence is not after that alert,
    /// so that no occurrence still ahead in the new zone is skipped (Tokyo's Sunday is Los Angeles'
    /// Saturday) and none that alerted alerts again.
    /// An alert already due is carried out first, in the zone it fell due in.
    public mutating func changeTimeZone(to timeZone: TimeZone, now: Date) -> [AlarmEffect] {
        advance(to: now) + readInTimeZone(timeZone, now: now) + advance(to: now)
    }

    /// ``changeTimeZone(to:now:)`` without its `advance`.
    private mutating func readInTimeZone(_ timeZone: TimeZone, now: Date, atStart: Bool = false) -> [AlarmEffect] {
        let oldZone = configuration.timeZone
        configuration.timeZone = timeZone
        for record in records.values {
            guard case .relative(let relative) = record.configuration.schedule, let lastDay = record.lastOccurrenceDay else { continue }
            let alerted = ScheduleMath.instant(of: relative.time, on: lastDay, in: oldZone)
            let day = ScheduleMath.localDay(of: alerted, in: timeZone)
            let newLastDay = ScheduleMath.instant(of: relative.time, on: day, in: timeZone) > alerted ? day.adding(days: -1) : day
            // Not `store`: a record restored under an untrusted clock stays so.
            guard newLastDay != lastDay else { continue }
            records[record.id]?.lastOccurrenceDay = newLastDay
            changedAlarms.insert(record.id)
        }
        var effects: [AlarmEffect] = []
        // Only relative schedules have a pending occurrence day (`rescheduled` leaves others as they are).
        for record in records.values where record.pendingOccurrenceDay != nil && record.isWaitingForSchedule {
            // At a start, an occurrence since the old plan's alert fell due while the node was down: late, or missed.
            let start = atStart ? min(now, (record.nextAlertDate ?? now) - 1) : now
            effects += replace(record, with: rescheduled(record, after: start, now: now), now: now)
        }
        return effects
    }

    // MARK: Internals

    private func existing(_ id: UUID) throws(AlarmNodeError) -> AlarmRecord {
        guard let record = records[id] else { throw .notFound(id) }
        return record
    }

    private func existing(_ id: UUID, in state: Alarm.State, for operation: String) throws(AlarmNodeError) -> AlarmRecord {
        let record = try existing(id)
        guard record.state == state else {
            let snoozed = if case .countdown(let countdown) = record.phase { countdown.isSnooze } else { false }
            let advice = switch (state, record.state) {
            case (.alerting, .countdown) where snoozed:
                "it is snoozed, not ringing: it rings again when its countdown ends; the node's stop button ends the snooze (cancel would end it\(record.repeats ? " for good, every repeat too" : ""))"
            case (.alerting, _): "it is not ringing (cancel would end it\(record.repeats ? " for good, every repeat too" : ""))"
            case (.countdown, .paused): "it is paused already; resume continues it"
            case (.countdown, _): "only a countdown pauses (a timer, a pre-alert, a snooze)"
            default: "only a paused alarm resumes"
            }
            throw .invalidState("\(operation) needs an alarm in state \(state.rawValue), but alarm \(id.uuidString) is \(record.state.rawValue): \(advice)")
        }
        return record
    }

    /// When `advance` must next look at this record (held or not).
    private static func deadline(of record: AlarmRecord, alertTimeout: TimeInterval) -> Date? {
        switch record.phase {
        case .scheduled(let alertDate): alertDate - (record.configuration.countdownDuration?.preAlert ?? 0)
        case .countdown(let countdown): countdown.fireDate
        case .paused: nil
        case .alerting(let since, _): since + alertTimeout
        }
    }

    /// The phase of an alarm waiting for `alertDate`: its pre-alert countdown if that has begun.
    private func scheduledPhase(
        alertDate: Date, configuration: AlarmManager.AlarmConfiguration<JSONValue>, now: Date
    ) -> AlarmRecord.Phase {
        if let preAlert = configuration.countdownDuration?.preAlert, now >= alertDate - preAlert, now < alertDate {
            return .countdown(.starting(at: alertDate - preAlert, total: preAlert, isPreAlert: true))
        }
        return .scheduled(alertDate: alertDate)
    }

    /// The record heading for its next relative occurrence after `now`, or unchanged if it has none.
    private func rescheduled(_ record: AlarmRecord, after start: Date, now: Date? = nil) -> AlarmRecord {
        guard case .relative(let relative) = record.configuration.schedule,
              let next = ScheduleMath.nextOccurrence(of: relative, after: start, lastDay: record.lastOccurrenceDay,
                                                     in: configuration.timeZone) else { return record }
        var record = record
        record.pendingOccurrenceDay = next.day
        record.phase = scheduledPhase(alertDate: next.date, configuration: record.configuration, now: now ?? start)
        return record
    }

    /// Stores `new` in place of `old` and reports the change: a `countdown` event when a countdown
    /// started (with no `old`, a phase begun afresh, whenever `new` counts down), then the new document.
    private mutating func replace(_ old: AlarmRecord?, with new: AlarmRecord, now: Date) -> [AlarmEffect] {
        guard old != new else { return [] }
        store(new)
        let countdownStarted = new.state == .countdown && old?.state != .countdown
        return (countdownStarted ? [.event(AlarmEvent(.countdown, alarmID: new.id, at: now))] : []) + [.changed(document(for: new))]
    }

    /// Starts a snooze: the countdown after an alert, started by auto-silence or by someone.
    private mutating func startCountdown(_ record: AlarmRecord, duration: TimeInterval, from start: Date, now: Date, bySilence: Bool = false) -> [AlarmEffect] {
        var record = record
        record.phase = .countdown(.starting(at: start, total: duration, isSnooze: true))
        record.silenceSnoozed = bySilence
        return replace(nil, with: record, now: now)
    }

    /// After an occurrence is over: a repeating alarm waits for its next one after `start` (now
    /// when nil), any other is removed.
    private mutating func finishOccurrence(of record: AlarmRecord, now: Date, after start: Date? = nil) -> [AlarmEffect] {
        var next = rescheduled(record, after: start ?? now, now: now)
        next.silenceSnoozed = false
        if record.repeats, next.isWaitingForSchedule { return replace(nil, with: next, now: now) }
        setRecord(record.id, nil)
        return [.removed(record.id)]
    }

    /// One due step of one alarm.
    private mutating func step(_ record: AlarmRecord, now: Date) -> [AlarmEffect] {
        switch record.phase {
        case .scheduled(let alertDate) where now < alertDate:
            var next = record
            next.phase = scheduledPhase(alertDate: alertDate, configuration: record.configuration, now: now)
            return replace(record, with: next, now: now)
        case .scheduled(let alertDate): return reachAlert(record, dueAt: alertDate, now: now)
        case .countdown(let countdown): return reachAlert(record, dueAt: countdown.fireDate, now: now)
        case .alerting(let since, _): return silence(record, timedOutAt: since + configuration.alertTimeout, now: now)
        case .paused: return []
        }
    }

    /// The alert date has come: alert, or report it missed when it is later than the grace.
    private mutating func reachAlert(_ record: AlarmRecord, dueAt alertDate: Date, now: Date) -> [AlarmEffect] {
        var record = record
        if let day = record.pendingOccurrenceDay {
            record.lastOccurrenceDay = max(day, record.lastOccurrenceDay ?? day)
            record.pendingOccurrenceDay = nil
        }
        let late = max(0, now.timeIntervalSince(alertDate))
        let lateDetail: [String: JSONValue] = ["late": .number((late * 1000).rounded() / 1000)]
        if late > configuration.missedAfter {
            store(record)
            let details = lateDetail.merging(["alertDate": .string(AlarmJSON.string(from: alertDate)), "title": .string(record.configuration.attributes.presentation.alert.title)]) { $1 }
            // A later occurrence that is late within the grace (the node was down for days) alerts next.
            return [.event(AlarmEvent(.missed, alarmID: record.id, at: now, details: details))]
                + finishOccurrence(of: record, now: now, after: now - configuration.missedAfter)
        }
        record.phase = .alerting(since: now, alertDate: alertDate)
        store(record)
        return [
            .event(AlarmEvent(.alerting, alarmID: record.id, at: now, details: lateDetail)),
            .alertStarted(record.id, sound: record.configuration.sound),
            .changed(document(for: record)),
        ]
    }

    /// Ends `id`'s alert at `now`, noting when.
    private mutating func endAlert(_ id: UUID, now: Date) -> AlarmEffect {
        lastAlertEnd = now
        return .alertEnded(id)
    }

    /// Nobody acted within the alert timeout: stop, or snooze when configured and possible, with
    /// the events of a stop (`stopped`) or a snooze (`countdown`) from source `silence`, without
    /// the stop intent: nobody pressed. The snooze, or a stop's next occurrence, counts from the
    /// timeout, which for an alert restored after a long downtime is long past: what fell due
    /// since is then decided as any alert that fell due while the node was down.
    private mutating func silence(_ record: AlarmRecord, timedOutAt timeout: Date, now: Date) -> [AlarmEffect] {
        let snooze = configuration.silenceAction == .countdown && !record.silenceSnoozed ? record.configuration.snoozeDuration : nil
        let event = AlarmEvent(.silenced, alarmID: record.id, at: now,
                               details: ["action": .string(snooze == nil ? "stop" : "countdown"), "title": .string(record.configuration.attributes.presentation.alert.title)])
        let effects: [AlarmEffect] = [endAlert(record.id, now: now), .event(event)]
        if let snooze { return effects + startCountdown(record, duration: snooze, from: timeout, now: now, bySilence: true).caused(by: .silence) }
        let stopped: [AlarmEffect] = [.event(AlarmEvent(.stopped, alarmID: record.id, at: now))]
        return effects + (stopped + finishOccurrence(of: record, now: now, after: timeout)).caused(by: .silence)
    }

    /// Runs the intent, or, for an alarm restored from before `intentTopics` refused its topic,
    /// reports why it does not.
    private func intentEffects(_ intent: AlarmIntent, record: AlarmRecord, now: Date) -> [AlarmEffect] {
        guard case .publish(let topic, _, _) = intent else { return [] }
        let refusal = configuration.intentTopics?.refusal(of: topic)
        let details: [String: JSONValue] = refusal.map { ["topic": .string(topic), "refused": .string($0)] } ?? ["topic": .string(topic)]
        let event = AlarmEffect.event(AlarmEvent(.intent, alarmID: record.id, at: now, details: details))
        return refusal == nil ? [.runIntent(intent, alarmID: record.id), event] : [event]
    }

    /// The local time shown while alerting: the schedule's time, else the alert date's local time.
    private func alertTime(of record: AlarmRecord, alertDate: Date) -> Alarm.Schedule.Relative.Time {
        if case .relative(let relative) = record.configuration.schedule { return relative.time }
        return ScheduleMath.localTime(of: alertDate, in: configuration.timeZone)
    }
}
