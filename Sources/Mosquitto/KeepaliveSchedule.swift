/// When the network thread must next run `mosquitto_loop_misc`, so that it can sleep in poll(2)
/// until then instead of waking at a fixed rate.
///
/// libmosquitto 2.0.11 sends a PINGREQ from `mosquitto_loop_misc` once `now >= next_msg_out`
/// (CLOCK_MONOTONIC in whole seconds), and `next_msg_out` is `now + keepalive` after every packet
/// written and on connecting; with a PINGREQ outstanding, the same check ends the connection. (Its
/// other rule, a ping after a keepalive without reads, is not needed to keep the broker content.)
/// This schedule mirrors the write rule from outside, reported after each write, so its check is
/// never due before libmosquitto's (which would make the thread spin); a check that finds nothing
/// due (a write it did not see) looks again a second later.
struct KeepaliveSchedule {
    let keepAlive: Duration
    /// When `mosquitto_loop_misc` is next expected to act (a whole second of CLOCK_MONOTONIC).
    private(set) var nextCheck: Duration

    /// Added to every wait: poll(2) never returns early, but a check made a little before the
    /// second turns would find nothing due and cost a second wake-up.
    static let margin: Duration = .milliseconds(10)

    /// On connecting (`mosquitto_connect_async` and `mosquitto_reconnect_async`), at `now` (CLOCK_MONOTONIC).
    init(keepAlive: Int, connectingAt now: Duration) {
        self.keepAlive = .seconds(keepAlive)
        nextCheck = Self.wholeSeconds(now) + self.keepAlive
    }

    /// A write call (`mosquitto_loop_write`, or `mosquitto_loop` with packets queued) returned at `now`.
    mutating func packetsWritten(at now: Duration) { nextCheck = Self.wholeSeconds(now) + keepAlive }

    /// `mosquitto_loop_misc` ran at `now`, and whatever it queued was written (and reported) since.
    /// If it was due and nothing was written, libmosquitto's clock says later: look again in a second.
    mutating func keepaliveChecked(at now: Duration) {
        if now >= nextCheck { nextCheck = Self.wholeSeconds(now) + .seconds(1) }
    }

    /// The poll(2) timeout from `now` until the next check is due, margin included.
    func pollTimeoutMilliseconds(at now: Duration) -> Int32 {
        let wait = nextCheck - now
        guard wait > .zero else { return 0 }
        let (seconds, attoseconds) = (wait + Self.margin).components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    private static func wholeSeconds(_ time: Duration) -> Duration { .seconds(time.components.seconds) }
}
