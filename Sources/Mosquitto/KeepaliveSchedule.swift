/// When the network thread must next run `mosquitto_loop_misc`, so that it can sleep in poll(2)
/// until then instead of waking at a fixed rate.
///
/// libmosquitto 2.0.11 sends a PINGREQ from `mosquitto_loop_misc` once `now >= next_msg_out`,
/// where `now` is CLOCK_MONOTONIC in whole seconds and `next_msg_out` is set to `now + keepalive`
/// whenever a packet has been written (and on connecting); with a PINGREQ already outstanding, the
/// same check ends the connection (`MOSQ_ERR_KEEPALIVE`). It also pings when nothing was read for
/// a keepalive, but the write rule alone keeps the broker (which drops a client silent for
/// 1.5 × keepalive) content, and a check made later than the read rule asks for is still made.
///
/// The schedule mirrors the write rule from outside: ``packetsWritten(at:)`` is reported after a
/// write call that had something to send, so its time is never earlier than libmosquitto's own,
/// and the check is never due before libmosquitto agrees (which would make the thread spin). If a
/// check finds nothing to do all the same (a write this schedule did not see), it looks again a
/// second later. Times are CLOCK_MONOTONIC readings, as `mosquitto_time` makes them.
struct KeepaliveSchedule {
    let keepAlive: Duration
    /// When `mosquitto_loop_misc` is next expected to act (a whole second of CLOCK_MONOTONIC).
    private(set) var nextCheck: Duration

    /// Added to every wait: poll(2) never returns early, but a check made a little before the
    /// second turns would find nothing due and cost a second wake-up.
    static let margin: Duration = .milliseconds(10)

    /// On connecting (`mosquitto_connect_async` and `mosquitto_reconnect_async` set `next_msg_out`).
    init(keepAlive: Int, connectingAt now: Duration) {
        self.keepAlive = .seconds(keepAlive)
        nextCheck = Self.wholeSeconds(now) + self.keepAlive
    }

    /// A write call (`mosquitto_loop_write`, or `mosquitto_loop` with packets queued) returned at `now`.
    mutating func packetsWritten(at now: Duration) {
        nextCheck = Self.wholeSeconds(now) + keepAlive
    }

    /// `mosquitto_loop_misc` ran at `now`, and whatever it queued was written (and reported) since.
    /// If it was due and nothing was written, libmosquitto's clock says later: look again in a second.
    mutating func keepaliveChecked(at now: Duration) {
        if now >= nextCheck {
            nextCheck = Self.wholeSeconds(now) + .seconds(1)
        }
    }

    /// The poll(2) timeout from `now` until the next check is due, margin included.
    func pollTimeoutMilliseconds(at now: Duration) -> Int32 {
        let wait = nextCheck - now
        guard wait > .zero else { return 0 }
        let (seconds, attoseconds) = (wait + Self.margin).components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }

    private static func wholeSeconds(_ time: Duration) -> Duration {
        .seconds(time.components.seconds)
    }
}
