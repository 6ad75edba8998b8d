@testable import AlarmNode
import Synchronization
import Testing

/// When the daemon gives start-up's memory back: once, `settle` after the first republication,
/// or `fallback` after the start without a broker.
@Suite("Start-up memory release")
struct StartupMemoryReleaseTests {
    /// A scheduler that keeps the work until the test runs it, and counts the releases.
    final class Harness: Sendable {
        let pending = Mutex<[(delay: Duration, work: @Sendable () -> Void)]>([])
        let releases = Atomic(0)

        func make() -> StartupMemoryRelease {
            StartupMemoryRelease(settle: .seconds(10), fallback: .seconds(60),
                                 schedule: { delay, work in self.pending.withLock { $0.append((delay, work)) } },
                                 release: { self.releases.add(1, ordering: .relaxed) })
        }

        var delays: [Duration] { pending.withLock { $0.map(\.delay) } }
        var releaseCount: Int { releases.load(ordering: .relaxed) }

        /// Runs the pending work scheduled `index`-th (its timer fired).
        func fire(_ index: Int) {
            pending.withLock { $0[index].work }()
        }
    }

    @Test("after the first republication: released once when it has settled; the fallback then does nothing")
    func afterRepublication() {
        let harness = Harness()
        let release = harness.make()
        release.started()
        release.republished()
        #expect(harness.delays == [.seconds(60), .seconds(10)])
        #expect(harness.releaseCount == 0)
        harness.fire(1)
        #expect(harness.releaseCount == 1)
        harness.fire(0)
        #expect(harness.releaseCount == 1)
        // A reconnection later republishes again: nothing more is scheduled or released.
        release.republished()
        #expect(harness.delays.count == 2)
        #expect(harness.releaseCount == 1)
    }

    @Test("without a broker: released once by the fallback")
    func withoutBroker() {
        let harness = Harness()
        let release = harness.make()
        release.started()
        harness.fire(0)
        #expect(harness.releaseCount == 1)
    }

    @Test("republished twice before settling: two timers, one release")
    func twoRepublications() {
        let harness = Harness()
        let release = harness.make()
        release.republished()
        release.republished()
        harness.fire(0)
        harness.fire(1)
        #expect(harness.releaseCount == 1)
    }
}
