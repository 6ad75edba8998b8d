/// When ``TimeKeeperService`` looks at whether the kernel has synchronized the clock, and when it
/// trusts an unsynchronized clock anyway (docs/time.md). Pure: the service sleeps until
/// ``nextLook`` and reports what it found, so the timing is tested without waiting.
///
/// A board with no network may never synchronize and must not wake often for it; an NTP step is
/// seen at once anyway, as a wall-clock jump. So the first look is a minute after the start
/// (restored alarms that look overdue are held by then), then every minute while alerts are held
/// and every 5 minutes otherwise, and never later than the bound while the clock is untrusted.
struct SynchronizationChecks {
    typealias Instant = ContinuousClock.Instant

    /// How long after start an unsynchronized clock is trusted anyway, so that a node with no
    /// network still reports missed alarms.
    static let untrustedClockBound: Duration = .seconds(600)
    /// The wait before the next look while alerts are held, and the first one.
    static let waitWhileHeld: Duration = .seconds(60)
    /// The wait before the next look while nothing is held.
    static let waitOtherwise: Duration = .seconds(300)

    private(set) var nextLook: Instant
    /// Whether the bound has passed, so that the clock is trusted though unsynchronized.
    private(set) var trustedAnyway = false
    private let bound: Instant

    init(startedAt start: Instant) {
        nextLook = start + Self.waitWhileHeld
        bound = start + Self.untrustedClockBound
    }

    /// After a look at `now` found the clock still unsynchronized: true once, when the bound has
    /// passed and the node is to trust the clock from then on.
    mutating func trustsAnyway(at now: Instant) -> Bool {
        guard !trustedAnyway, now >= bound else { return false }
        trustedAnyway = true
        return true
    }

    /// Plans the look after one at `now` that found the clock still unsynchronized.
    mutating func planNextLook(after now: Instant, alertsHeld: Bool) {
        let next = now + (alertsHeld ? Self.waitWhileHeld : Self.waitOtherwise)
        nextLook = trustedAnyway ? next : min(next, bound)
    }
}
