import Synchronization

/// A clock that only moves when a test advances it. Sleepers wake when the
/// clock reaches their deadline; a sleep until a past instant returns at once.
final class ManualClock: Clock {
    struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the clock's origin.
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var watchers: [Watcher] = []
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .nanoseconds(1) }

    /// Deadlines of the tasks sleeping now, earliest first.
    var pendingDeadlines: [Instant] {
        state.withLock { $0.sleepers.values.map(\.deadline).sorted() }
    }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, watchers) = state.withLock { state -> (Result<Void, any Error>?, [Watcher]) in
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    let ready = state.watchers.filter { $0.deadline == deadline }
                    state.watchers.removeAll { $0.deadline == deadline }
                    return (nil, ready)
                }
                for watcher in watchers { watcher.continuation.resume() }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock to `instant` and wakes every sleeper due by then.
    func advance(to instant: Instant) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, instant)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Returns once some task sleeps until exactly `deadline`.
    func waitForSleeper(until deadline: Instant) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let sleeping = state.withLock { state -> Bool in
                if state.sleepers.values.contains(where: { $0.deadline == deadline }) { return true }
                state.watchers.append(Watcher(deadline: deadline, continuation: continuation))
                return false
            }
            if sleeping { continuation.resume() }
        }
    }
}

extension ManualClock.Instant {
    static func ms(_ milliseconds: Int) -> Self { Self(offset: .milliseconds(milliseconds)) }
}
