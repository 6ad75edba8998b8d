import Glibc

/// Readings of the kernel's clocks, in nanoseconds.
public enum ClockReading {
    /// `clock_gettime(clock)`; CLOCK_REALTIME, CLOCK_MONOTONIC and CLOCK_BOOTTIME always exist on
    /// Linux ≥ 2.6.39, so the call cannot fail for them.
    public static func nanoseconds(_ clock: clockid_t) -> Int64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The wall clock (CLOCK_REALTIME, nanoseconds since 1970) at `instant`, a moment of the
    /// recent past or near future: now's reading plus the monotonic distance to `instant`, so
    /// that a moment stamped cheaply with `ContinuousClock` can be reported in wall time. The
    /// wall clock is read between two monotonic readings and set against their midpoint, so
    /// that the time between the readings does not shift the result.
    public static func wallClockNanoseconds(at instant: ContinuousClock.Instant) -> Int64 {
        let before = ContinuousClock.now
        let wall = nanoseconds(CLOCK_REALTIME)
        let midpoint = before.advanced(by: before.duration(to: .now) / 2)
        return wall + midpoint.duration(to: instant).inNanoseconds
    }
}
