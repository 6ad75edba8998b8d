@testable import AlarmNode
import Synchronization
import Testing

@Suite("Free heap pages go back to the kernel after bursts")
struct HeapReleaseServiceTests {
    @Test func aBurstOfMessagesReleasesOnceAndNothingRunsWithoutOne() async throws {
        let (bursts, sent) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let releases = Mutex(0)
        let service = HeapReleaseService(bursts: bursts, quietPeriod: .zero, release: { releases.withLock { $0 += 1 } })
        for _ in 0..<5 { sent.yield() }
        sent.finish()
        try await service.run()
        #expect(releases.withLock { $0 } == 1, "five messages sent together are one burst")

        let (quiet, ended) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        ended.finish()
        try await HeapReleaseService(bursts: quiet, quietPeriod: .zero, release: { releases.withLock { $0 += 1 } }).run()
        #expect(releases.withLock { $0 } == 1, "no message, no release")
    }

}
