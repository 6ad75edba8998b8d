import AlarmHardware
import AlarmKit
import FoundationEssentials

/// What a button press does to the alarms (docs/hardware.md), decided from the engine's state alone.
public enum ButtonAction: Sendable, Hashable {
    case perform(AlarmOperation, id: UUID)
    /// The alert's secondary button (snooze, or its custom intent).
    case secondary(id: UUID)
    /// The stop button on a snoozed alarm (``AlarmEngine/endSnooze(id:now:)``).
    case endSnooze(id: UUID)

    /// Carries the action out on `engine` at `now`; a refusal leaves `engine` unchanged.
    public func apply(to engine: inout AlarmEngine, now: Date) throws(AlarmNodeError) -> [AlarmEffect] {
        switch self {
        case .perform(let operation, let id): try engine.perform(operation, id: id, now: now)
        case .secondary(let id): try engine.secondaryAction(id: id, now: now)
        case .endSnooze(let id): try engine.endSnooze(id: id, now: now)
        }
    }
}

public enum ButtonActions {
    /// A snooze press this soon after a countdown started is the same press again (a double
    /// press, half asleep) and does nothing: pausing the snooze that the first press began, or
    /// another countdown, would leave an alarm silent.
    public static let repeatedPressWindow: TimeInterval = 2
    /// A snooze press this soon after an alert ended was meant for that alert (pressed just after
    /// a stop, or from Home Assistant a moment late) and does nothing: it pauses no other timer.
    public static let afterAlertWindow: TimeInterval = 10

    /// The actions a press at `now` calls for (already mapped for a single-button board, ``ButtonLayout``):
    /// - while anything alerts, stop stops every alerting alarm and snooze applies each alerting
    ///   alarm's secondary behaviour;
    /// - otherwise snooze toggles the timer that ends soonest (pauses the running one, unless a
    ///   countdown started within ``repeatedPressWindow``; or resumes the paused one with the least
    ///   time left when none runs; nothing within ``afterAlertWindow`` of an alert's end); stop
    ///   ends every snooze (not within ``afterAlertWindow`` of an alert's end, when a second press
    ///   was meant for that alert), and a long stop press cancels every timer too.
    ///
    /// Buttons pause, resume and cancel timers (alarms with no schedule) only, and pause none while
    /// snoozed: a paused alarm never rings, and a second tap on snooze, half asleep, must not keep
    /// a snoozed alarm or nap timer from ringing again.
    public static func plan(_ button: Button, _ kind: ButtonPress.Kind, engine: AlarmEngine, now: Date) -> [ButtonAction] {
        let alerting = engine.alerting.map(\.id)
        if !alerting.isEmpty {
            switch button {
            case .stop: return alerting.map { .perform(.stop, id: $0) }
            case .snooze: return alerting.map { .secondary(id: $0) }
            }
        }
        let running = engine.records.values.compactMap { record -> (record: AlarmRecord, countdown: AlarmRecord.Countdown)? in
            guard case .countdown(let countdown) = record.phase else { return nil }
            return (record, countdown)
        }.sorted { $0.countdown.fireDate < $1.countdown.fireDate }
        // A clock stepped back since the alert ended blocks nothing.
        let justAfterAlert = engine.lastAlertEnd.map { (0..<afterAlertWindow).contains(now.timeIntervalSince($0)) } ?? false
        // A long press cancels the timers, snoozed ones among them.
        let snoozes = justAfterAlert ? [] : running.filter { $0.countdown.isSnooze && !($0.record.isTimer && kind == .long) }
            .map { ButtonAction.endSnooze(id: $0.record.id) }
        switch (button, kind) {
        case (.snooze, _):
            guard running.allSatisfy({ now.timeIntervalSince($0.countdown.startDate) >= repeatedPressWindow }), !justAfterAlert else { return [] }
            if let soonest = running.first(where: { $0.record.isTimer && !$0.countdown.isSnooze }) {
                return [.perform(.pause, id: soonest.record.id)]
            }
            let paused = engine.records.values.compactMap { record -> (UUID, TimeInterval)? in
                guard record.isTimer, case .paused(let total, let elapsed, _) = record.phase else { return nil }
                return (record.id, total - elapsed)
            }
            return paused.min { $0.1 < $1.1 }.map { [.perform(.resume, id: $0.0)] } ?? []
        case (.stop, .long): return snoozes + cancelTimers(engine: engine)
        case (.stop, .short): return snoozes
        }
    }

    /// Cancels every timer that counts down or is paused (a ringing one is stopped instead).
    public static func cancelTimers(engine: AlarmEngine) -> [ButtonAction] {
        engine.records.values.filter { $0.isTimer && ($0.state == .countdown || $0.state == .paused) }
            .map { .perform(.cancel, id: $0.id) }
    }
}

extension AlarmRecord {
    /// A timer: an alarm with no schedule, which only counts down.
    var isTimer: Bool { configuration.schedule == nil }
}

extension ButtonActions {
    /// Carries out a press on `node`: plans it from the node's state and applies every action in
    /// one change, without waiting for the disk (a press has nobody to answer, and the alarms it
    /// stops must go quiet together). `event` (the `button` event) is published first, so that
    /// it comes before the events of what the press did, whose `source` is `source` (a Home
    /// Assistant button presses too). Returns the refusals, which a button cannot report to
    /// anyone but the log.
    public static func press(
        _ button: Button, _ kind: ButtonPress.Kind, on node: LocalAlarmNode, source: AlarmEvent.Source = .button,
        reporting event: AlarmEvent? = nil
    ) async -> [(ButtonAction, AlarmNodeError)] {
        await apply(source: source, on: node, reporting: event) { engine, now in plan(button, kind, engine: engine, now: now) }
    }

    /// Carries out the actions `plan` picks from the node's state, as one change (see `press`).
    public static func apply(
        source: AlarmEvent.Source, on node: LocalAlarmNode, reporting event: AlarmEvent? = nil,
        planning plan: @Sendable (AlarmEngine, Date) -> [ButtonAction]
    ) async -> [(ButtonAction, AlarmNodeError)] {
        await node.applyWithoutWaiting(source: source, reporting: event.map { [.event($0)] } ?? [],
                                       planning: plan) { engine, action, now throws(AlarmNodeError) in
            try action.apply(to: &engine, now: now)
        }
    }
}
