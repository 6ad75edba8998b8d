import CLinux
import Glibc
import Logging

/// A step of the wall clock (CLOCK_REALTIME) relative to elapsed time: `settimeofday`,
/// `clock_settime`, `date -s`, an NTP step, or RTC-less boot catching up.
public struct WallClockJump: Sendable, Hashable {
    /// How far the wall clock moved relative to CLOCK_BOOTTIME: positive when it jumped
    /// forward. Several steps between two wake-ups add up to one jump.
    public let step: Duration

    /// `step` in seconds.
    public var stepSeconds: Double { Double(step.components.seconds) + Double(step.components.attoseconds) / 1e18 }
}

/// Wall-clock jumps, reported as they happen.
///
/// Each iterator owns a `timerfd_create(CLOCK_REALTIME)` timer armed with
/// `timerfd_settime(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)` a century ahead, so it never
/// expires; when anyone sets the clock, the kernel cancels it and `read(2)` fails with
/// `ECANCELED`. The iterator then re-arms it and reports the step, measured by comparing
/// `clock_gettime(CLOCK_REALTIME) - clock_gettime(CLOCK_BOOTTIME)` at arming and after the
/// jump. CLOCK_BOOTTIME is the clock of Swift's `ContinuousClock` on Linux; it keeps counting
/// through suspend, so a resume (which also cancels the timer) reports a step near zero.
///
/// The timer is armed by `makeAsyncIterator()`: a jump after that returns is reported.
/// Waiting happens on a dedicated thread in `poll(2)`, never on Swift's cooperative pool;
/// cancelling the iterating task ends the sequence (`next()` returns nil) and the thread at
/// once. Errors are ``SystemError``s.
public struct WallClockJumps: AsyncSequence, Sendable {
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func makeAsyncIterator() -> KernelEventIterator<WallClockJump> {
        KernelEventIterator { [logger] () throws(SystemError) in try WallClockJumpTimer(logger: logger) }
    }
}

/// The cancel-on-set timerfd behind ``WallClockJumps``.
struct WallClockJumpTimer: ReadinessSource {
    static let threadName = "alarmd-clockjmp"
    static let waitingAction = "waiting for wall-clock jumps on a timerfd"

    /// How far ahead the timer is armed: a century, so only a clock set cancels it.
    private static let armingHorizonSeconds = 100 * 366 * 86_400

    let descriptor: OwnedDescriptor
    private let logger: Logger
    /// CLOCK_REALTIME minus CLOCK_BOOTTIME when the timer was last armed.
    private var offsetAtArming: Duration

    init(logger: Logger) throws(SystemError) {
        self.logger = logger
        descriptor = OwnedDescriptor(try systemCall("creating a CLOCK_REALTIME timerfd to detect wall-clock jumps") {
            timerfd_create(CLOCK_REALTIME, CLINUX_TFD_CLOEXEC | CLINUX_TFD_NONBLOCK)
        })
        offsetAtArming = try Self.arm(descriptor)
    }

    /// Arms the timer, then measures the offset it is relative to: a jump between the two
    /// calls still cancels the timer, and is reported with a step near zero rather than lost.
    private static func arm(_ descriptor: OwnedDescriptor) throws(SystemError) -> Duration {
        let now = ClockReading.nanoseconds(CLOCK_REALTIME) / 1_000_000_000
        var setting = itimerspec()
        setting.it_value.tv_sec = Int(now) + armingHorizonSeconds
        try systemCall("arming the wall-clock jump timerfd") {
            timerfd_settime(descriptor.raw, CLINUX_TFD_TIMER_ABSTIME | CLINUX_TFD_TIMER_CANCEL_ON_SET, &setting, nil)
        }
        // CLOCK_REALTIME minus CLOCK_BOOTTIME, with CLOCK_BOOTTIME read on both sides of the wall
        // clock and averaged so the reading's own duration does not bias it.
        let bootBefore = ClockReading.nanoseconds(CLOCK_BOOTTIME)
        let wall = ClockReading.nanoseconds(CLOCK_REALTIME)
        let bootAfter = ClockReading.nanoseconds(CLOCK_BOOTTIME)
        return .nanoseconds(wall - (bootBefore + bootAfter) / 2)
    }

    mutating func readEvent() throws(SystemError) -> WallClockJump? {
        var expirations: UInt64 = 0
        do {
            try systemCall("reading the wall-clock jump timerfd") { read(descriptor.raw, &expirations, MemoryLayout<UInt64>.size) }
            // The timer expired: the clock was set more than a century ahead.
            logger.warning("Wall-clock jump timer expired; re-arming", metadata: ["expirations": "\(expirations)"])
            offsetAtArming = try Self.arm(descriptor)
            return nil
        } catch let error where error.code == ECANCELED {
            let before = offsetAtArming
            offsetAtArming = try Self.arm(descriptor)
            return WallClockJump(step: offsetAtArming - before)
        } catch let error where error.code == EAGAIN { return nil }
    }
}
