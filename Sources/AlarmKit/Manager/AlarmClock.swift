import FoundationEssentials
import Synchronization

/// The source of time for an alarm node: the wall clock to read, and a way to wait.
///
/// Production uses `SystemAlarmClock`; tests use `ManualAlarmClock` and never sleep.
public protocol AlarmClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// Suspends until the clock reads `deadline` or later. Throws `CancellationError` when the
    /// task is cancelled, including when it was cancelled before the call.
    func sleep(until deadline: Date) async throws
}

/// The system's wall clock; waits run on a monotonic clock, so a wall-clock step during a
/// wait neither lengthens nor shortens it (the node re-plans when told of the step).
public struct SystemAlarmClock: AlarmClock {
    private let wait: @Sendable (Duration) async throws -> Void

    /// Waits with `Task.sleep` on `ContinuousClock`.
    public init() { self.init(sleepingOn: ContinuousClock()) }

    /// Waits on `clock`, with zero tolerance: the daemon passes a clock that sleeps on a
    /// timerfd of its own, so that a far-off deadline costs no wake-ups meanwhile.
    public init<C: Clock>(sleepingOn clock: C) where C.Duration == Duration {
        wait = { try await clock.sleep(for: $0, tolerance: .zero) }
    }

    public var now: Date { Date() }

    public func sleep(until deadline: Date) async throws {
        // Capped at a year: Duration's range, and a deadline that far is re-planned anyway.
        let seconds = min(deadline.timeIntervalSinceNow, 365 * 86_400)
        guard seconds > 0 else { return }
        try await wait(.seconds(seconds))
    }
}

/// A clock that moves only when told to: the injected clock of tests.
public final class ManualAlarmClock: AlarmClock {
    private struct Sleeper {
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UUID: Sleeper] = [:]
    }

    private let state: Mutex<State>

    public init(now: Date) { state = Mutex(State(now: now)) }

    public var now: Date { state.withLock { $0.now } }

    /// How many tasks are waiting on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Date) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Checked under the lock: a cancellation before it has already run `onCancel`,
                // which found no sleeper to resume; one after it finds this one.
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come.
    public func advance(by seconds: TimeInterval) { advance(to: now.addingTimeInterval(seconds)) }

    /// Sets the clock (forwards or backwards, as a wall-clock step) and wakes due sleepers.
    public func advance(to date: Date) {
        let due: [Sleeper] = state.withLock { state in
            state.now = date
            let due = state.sleepers.filter { $0.value.deadline <= date }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
