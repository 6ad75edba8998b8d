import CLinux
import Glibc

/// Reads the kernel's clock discipline state.
public enum ClockSynchronization {
    /// True when the kernel considers the clock synchronized: `adjtimex(2)` (called with
    /// `modes = 0`, which only reads and needs no privilege) did not return `TIME_ERROR` and
    /// `STA_UNSYNC` is clear. An NTP client (chrony, systemd-timesyncd, ntpd) clears `STA_UNSYNC`
    /// once it disciplines the clock; the kernel sets it again when the maximum error grows past
    /// 16 s without updates.
    public static func isSynchronized() throws(SystemError) -> Bool {
        var reading = timex()
        reading.modes = 0
        let state = try systemCall("reading the clock's synchronization state with adjtimex") { adjtimex(&reading) }
        return state != TIME_ERROR && reading.status & STA_UNSYNC == 0
    }
}
