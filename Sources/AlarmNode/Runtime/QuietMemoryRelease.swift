import Dispatch
import LinuxSystem
import Synchronization

/// Gives the heap's freed memory back to the system once a burst of changes is over.
///
/// A burst of commands (an automation rescheduling every alarm, a storm of requests) leaves
/// the allocator holding the freed memory of its messages and encodings, which then counts in
/// the daemon's resident set for good. The node reports each state write here; once no write
/// came for `quietPeriod`, `ProcessMemory.releaseFreedMemory()` (`malloc_trim`) runs once. At
/// most one timer is pending, one wake-up per `quietPeriod` during a burst, none at idle.
final class QuietMemoryRelease: Sendable {
    /// When to release, decided from the writes and the timer alone.
    struct Schedule: Sendable, Equatable {
        private var writesSinceTimer = 0
        private(set) var timerPending = false

        /// A write happened; true when a timer must be started.
        mutating func wrote() -> Bool {
            writesSinceTimer += 1
            guard !timerPending else { return false }
            timerPending = true
            return true
        }

        /// The timer fired; true when the node stayed quiet since it started (release now),
        /// false when writes came meanwhile (start it again).
        mutating func timerFired() -> Bool {
            let quiet = writesSinceTimer == 0
            writesSinceTimer = 0
            timerPending = !quiet
            return quiet
        }
    }

    private let quietPeriod: Duration
    private let schedule = Mutex(Schedule())
    private let queue = DispatchQueue(label: "alarmd.memory-release")

    init(quietPeriod: Duration = .seconds(2)) {
        self.quietPeriod = quietPeriod
    }

    /// Called after each state write.
    func wrote() {
        if schedule.withLock({ $0.wrote() }) { startTimer() }
    }

    private func startTimer() {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(quietPeriod.inNanoseconds))) { [self] in
            if schedule.withLock({ $0.timerFired() }) {
                ProcessMemory.releaseFreedMemory()
            } else {
                startTimer()
            }
        }
    }
}
