@testable import AlarmNode
import Testing

/// When alarmd looks at the clock's synchronization while the kernel says it is unsynchronized,
/// and when it trusts the clock anyway (docs/time.md): the looks of a board that never
/// synchronizes, as offsets in seconds from the start, with no waiting.
@Suite("Synchronization checks")
struct SynchronizationChecksTests {
    private let start = ContinuousClock.now

    /// Follows the plan for `looks` looks, each made on time (or `late` seconds after it was
    /// due), with `held` telling whether alerts are held after each; returns when each look was
    /// made and the ones at which the clock was trusted anyway.
    private func follow(looks: Int, late: Int = 0, held: (Int) -> Bool = { _ in false }) -> (at: [Int], trusted: [Int]) {
        var checks = SynchronizationChecks(startedAt: start)
        var at: [Int] = [], trusted: [Int] = []
        for _ in 0..<looks {
            let now = checks.nextLook + .seconds(late)
            let second = Int((now - start).components.seconds)
            at.append(second)
            if checks.trustsAnyway(at: now) { trusted.append(second) }
            checks.planNextLook(after: now, alertsHeld: held(second))
        }
        return (at, trusted)
    }

    @Test func nothingHeldLooksEveryFiveMinutesAndAtTheBound() {
        let plan = follow(looks: 5)
        #expect(plan.at == [60, 360, 600, 900, 1200])
        #expect(plan.trusted == [600])
    }

    @Test func heldAlertsAreLookedAtEveryMinuteUntilTheBound() {
        // Held until the clock is trusted at 600 s, which decides them.
        let plan = follow(looks: 12) { $0 < 600 }
        #expect(plan.at == [60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 900, 1200])
        #expect(plan.trusted == [600])
    }

    @Test func aLateLookTrustsOnceAndPlansFromWhenItWasMade() {
        // A board suspended past its look: each look is made 100 s after it was due.
        let plan = follow(looks: 4, late: 100)
        #expect(plan.at == [160, 560, 700, 1100])
        #expect(plan.trusted == [700])
    }

    @Test func onceTrustedHeldAlertsStillGetAMinute() {
        // After the bound nothing is held in practice; if something is, a minute apart still.
        let plan = follow(looks: 4) { $0 >= 600 }
        #expect(plan.at == [60, 360, 600, 660])
        #expect(plan.trusted == [600])
    }
}
