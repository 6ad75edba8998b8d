@testable import AlarmNode
import Synchronization
import Testing

@Suite("Free heap pages go back to the kernel after bursts")
struct HeapReleaseServiceTests {
    @Test func aBurstIsReleasedOnceAfterAQuietPeriodAndNothingRunsWithoutOne() async throws {
        let (bursts, began) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let releases = Mutex(0)
        // Messages keep coming through the first three looks, then stop.
        let looks = Mutex(0)
        let service = HeapReleaseService(bursts: bursts, messagesSent: { looks.withLock { $0 += 1; return min($0, 4) } },
                                         quietPeriod: .zero, release: { releases.withLock { $0 += 1 } })
        for _ in 0..<5 { began.yield() }
        began.finish()
        try await service.run()
        #expect(releases.withLock { $0 } == 1, "five bursts begun together are one")
        #expect(looks.withLock { $0 } == 5, "it waited until a look found no new message")

        let (quiet, ended) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        ended.finish()
        try await HeapReleaseService(bursts: quiet, messagesSent: { 0 }, quietPeriod: .zero,
                                     release: { releases.withLock { $0 += 1 } }).run()
        #expect(releases.withLock { $0 } == 1, "no message, no release")
    }
}
