import Foundation
import MosquittoTestSupport
import Testing
@testable import AlarmKit

@Suite("The manual clock of the tests", .timeLimit(.minutes(1)))
struct ManualAlarmClockTests {
    @Test("A task cancelled before it sleeps throws at once instead of waiting forever")
    func cancelledBeforeSleeping() async throws {
        let clock = ManualAlarmClock(now: date("2026-11-22T10:00:00Z"))
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: .distantFuture)
        }
        // Reported through a stream, so that a sleeper that never ends fails the test at the
        // deadline instead of hanging it (awaiting the task itself cannot be given up).
        let (ends, end) = AsyncStream.makeStream(of: String.self)
        Task {
            do {
                try await sleeper.value
                end.yield("woke")
            } catch {
                end.yield(error is CancellationError ? "cancelled" : "\(error)")
            }
        }
        let outcome = try await firstValue(of: ends, "the sleeper's end", within: .seconds(10)) { _ in true }
        #expect(outcome == "cancelled")
        #expect(clock.sleeperCount == 0)
    }

    @Test("A sleeper wakes when the clock reaches its deadline, and a cancelled one throws")
    func wakesAndCancels() async throws {
        let start = date("2026-11-22T10:00:00Z")
        let clock = ManualAlarmClock(now: start)
        let woken = Task { try await clock.sleep(until: start + 60) }
        let cancelled = Task { try await clock.sleep(until: start + 60) }
        try await waitUntil("both sleepers") { clock.sleeperCount >= 2 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        clock.advance(by: 60)
        try await woken.value
        #expect(clock.sleeperCount == 0)
    }
}
