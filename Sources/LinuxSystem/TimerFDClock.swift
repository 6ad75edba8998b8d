import CLinux
import Glibc
import Synchronization

/// A `Clock` that reads like `ContinuousClock` (CLOCK_BOOTTIME on Linux) and serves every
/// sleep from one dedicated thread blocked in poll(2) on a timerfd armed exactly for the
/// earliest pending deadline.
///
/// Why not `Task.sleep`: on Linux it becomes a libdispatch timer, and one without a tolerance
/// gets libdispatch's default leeway, a tenth of the interval and at least a millisecond (a
/// 30 ms debounce wait measured up to 3 ms late here). The daemon's waits are deadlines that
/// people notice (a button's debounce, a buzzer pattern, an alarm), so every sleep on this clock
/// is armed exactly and wakes within the kernel's timer slack (50 µs by default); the tolerance
/// argument is ignored. A far deadline costs no wake-ups while it is pending.
///
/// The thread starts with the first sleep and lives as long as the process. Should the
/// timerfd or the thread be impossible to create (descriptor limits), sleeps fall back to
/// `ContinuousClock` with zero tolerance, so timing still works.
public struct TimerFDClock: Clock {
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until `deadline` (arming the shared timerfd with `timerfd_settime` when this is
    /// the earliest deadline); throws `CancellationError` when the task is cancelled.
    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration? = nil) async throws {
        switch TimerThread.shared {
        case .success(let thread): try await thread.sleep(until: deadline)
        case .failure: try await ContinuousClock().sleep(until: deadline, tolerance: .zero)
        }
    }
}

/// The thread behind ``TimerFDClock``: a table of sleepers and a CLOCK_BOOTTIME timerfd that
/// is always armed for the earliest of them (or disarmed when there is none). Registering or
/// cancelling a sleeper re-arms the timer from the caller's thread; `timerfd_settime` takes
/// effect on the thread's pending poll(2) at once. Due sleepers are resumed from the thread and
/// go on on Swift's pool.
///
/// The daemon has a handful of sleepers at a time (the node's timer, the hardware driver, a
/// button's debounce deadline), so a linear scan for the earliest is the simplest right structure.
final class TimerThread: Sendable {
    /// The process's one timer thread, made on first use.
    static let shared: Result<TimerThread, SystemError> = Result { () throws(SystemError) in try TimerThread() }

    private struct Sleeper {
        /// CLOCK_BOOTTIME, in nanoseconds.
        let deadline: Int64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        /// The deadline the timerfd is armed for, or nil when disarmed.
        var armedFor: Int64?
    }

    private let state = Mutex(State())
    private let timer: OwnedDescriptor

    private init() throws(SystemError) {
        timer = OwnedDescriptor(try systemCall("creating the CLOCK_BOOTTIME timerfd that serves the daemon's sleeps") {
            timerfd_create(CLOCK_BOOTTIME, CLINUX_TFD_CLOEXEC | CLINUX_TFD_NONBLOCK)
        })
        try startDedicatedThread(named: "alarmd-timer") { [self] in serve() }
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let target = Self.bootTimeNanoseconds(at: deadline)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    guard target > ClockReading.nanoseconds(CLOCK_BOOTTIME) else { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: target, continuation: continuation)
                    do throws(SystemError) {
                        try rearm(&state)
                        return nil
                    } catch {
                        state.sleepers[id] = nil
                        return .failure(error)
                    }
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let cancelled = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: id)
                // A failure here only leaves a wake-up with nothing to do.
                try? rearm(&state)
                return sleeper
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The thread's loop: wakes when the armed deadline passes, resumes every sleeper that is
    /// due (the earliest first) and re-arms the timer for the rest. Runs for the life of the process.
    private func serve() {
        var descriptor = pollfd(fd: timer.raw, events: Int16(POLLIN), revents: 0)
        var count: UInt64 = 0
        while true {
            // Failing polls (none is expected) are treated as a wake-up, which only re-checks.
            _ = try? systemCall("waiting on the timer's timerfd") { poll(&descriptor, 1, -1) }
            // Non-blocking: a re-arm between the poll and the read leaves nothing to read.
            _ = read(timer.raw, &count, MemoryLayout<UInt64>.size)
            for sleeper in takeDueSleepers() { sleeper.continuation.resume() }
        }
    }

    /// Removes the sleepers that are due and re-arms the timer for the rest.
    private func takeDueSleepers() -> [Sleeper] {
        state.withLock { state in
            let now = ClockReading.nanoseconds(CLOCK_BOOTTIME)
            // The timer is armed for the earliest sleeper: nothing is due before it. (Disarmed with
            // sleepers left means a re-arm failed: look at them all.)
            if let armed = state.armedFor, armed > now { return [] }
            guard !state.sleepers.isEmpty else { return [] }
            let dueIDs = state.sleepers.compactMap { $0.value.deadline <= now ? $0.key : nil }
            // Several may be due after a late wake-up: the earliest is resumed first.
            let due = dueIDs.compactMap { state.sleepers.removeValue(forKey: $0) }.sorted { $0.deadline < $1.deadline }
            state.armedFor = nil
            try? rearm(&state)
            return due
        }
    }

    /// Arms the timerfd for the earliest sleeper, or disarms it; called with the lock held.
    private func rearm(_ state: inout State) throws(SystemError) {
        let earliest = state.sleepers.values.lazy.map(\.deadline).min()
        guard earliest != state.armedFor else { return }
        var setting = itimerspec()
        if let earliest {
            setting.it_value = timespec(tv_sec: Int(earliest / 1_000_000_000), tv_nsec: Int(earliest % 1_000_000_000))
        }
        try systemCall("arming the timer's timerfd") { timerfd_settime(timer.raw, CLINUX_TFD_TIMER_ABSTIME, &setting, nil) }
        state.armedFor = earliest
    }

    /// `instant` on CLOCK_BOOTTIME in nanoseconds. `ContinuousClock` reads CLOCK_BOOTTIME on
    /// Linux but keeps its instants opaque, so the distance from its `now` is added to a
    /// reading of the same clock (the two reads are nanoseconds apart).
    private static func bootTimeNanoseconds(at instant: ContinuousClock.Instant) -> Int64 {
        let remaining = ContinuousClock.now.duration(to: instant)
        // Past a century the deadline is as good as never; clamping keeps the sum in range.
        return ClockReading.nanoseconds(CLOCK_BOOTTIME) + min(remaining, .seconds(100 * 366 * 86_400)).inNanoseconds
    }
}
