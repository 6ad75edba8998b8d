import CLinux
import Glibc

/// What the kernel believes about the system clock's synchronization.
public struct ClockSynchronizationStatus: Sendable, Hashable {
    /// True when the kernel considers the clock synchronized: `adjtimex` did not return
    /// `TIME_ERROR` and `STA_UNSYNC` is clear. An NTP client (chrony, systemd-timesyncd, ntpd)
    /// clears `STA_UNSYNC` once it disciplines the clock; the kernel sets it again when the
    /// maximum error grows past 16 s without updates.
    public let isSynchronized: Bool
    /// The NTP client's estimate of the clock's error (`timex.esterror`).
    public let estimatedError: Duration
    /// The kernel's bound on the clock's error (`timex.maxerror`); it grows by 500 ppm
    /// while nobody updates it.
    public let maximumError: Duration
}

/// Reads the kernel's clock discipline state.
public enum ClockSynchronization {
    /// Calls `adjtimex(2)` with `modes = 0`, which only reads (no privilege needed).
    public static func status() throws(SystemError) -> ClockSynchronizationStatus {
        var reading = timex()
        reading.modes = 0
        let state = try systemCall("reading the clock's synchronization state with adjtimex") {
            adjtimex(&reading)
        }
        return ClockSynchronizationStatus(
            isSynchronized: state != TIME_ERROR && reading.status & STA_UNSYNC == 0,
            estimatedError: .microseconds(reading.esterror),
            maximumError: .microseconds(reading.maxerror)
        )
    }
}
