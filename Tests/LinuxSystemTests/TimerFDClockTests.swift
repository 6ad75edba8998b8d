import Foundation
import Glibc
import Testing
@testable import LinuxSystem

/// The timerfd thread against the real kernel timer. Deadlines are a few milliseconds away:
/// waiting is what a clock is for, so these tests wait, briefly.
@Suite("TimerFDClock")
struct TimerFDClockTests {
    private let clock = TimerFDClock()

    @Test func aSleepReturnsAtItsDeadlineAndNotBefore() async throws {
        let deadline = clock.now.advanced(by: .milliseconds(15))
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
    }

    @Test func sleepersWakeInDeadlineOrderWhateverTheOrderTheyStartedIn() async throws {
        let start = clock.now
        let order = try await withThrowingTaskGroup(of: Int.self) { group in
            for milliseconds in [40, 10, 25] {
                group.addTask {
                    try await clock.sleep(until: start.advanced(by: .milliseconds(milliseconds)))
                    return milliseconds
                }
            }
            var order: [Int] = []
            for try await milliseconds in group { order.append(milliseconds) }
            return order
        }
        #expect(order == [10, 25, 40])
        #expect(start.duration(to: clock.now) >= .milliseconds(40))
    }

    @Test func aDeadlineInThePastReturnsAtOnce() async throws {
        let before = clock.now
        try await clock.sleep(until: before.advanced(by: .seconds(-5)))
        #expect(before.duration(to: clock.now) < .seconds(1))
    }

    @Test func cancellingAFarSleepThrowsCancellationPromptlyAndLeavesOthersOnTime() async throws {
        let far = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(3600))) }
        // The near sleep is registered after the far one, so it re-arms the timer earlier; the
        // far one's cancellation must re-arm it without losing the near one.
        let nearDeadline = clock.now.advanced(by: .milliseconds(30))
        let near = Task { try await clock.sleep(until: nearDeadline) }
        far.cancel()
        await #expect(throws: CancellationError.self) { try await far.value }
        try await value(of: near, within: .seconds(10), waitingFor: "the near sleep")
        #expect(clock.now >= nearDeadline)
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsAtOnce() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now.advanced(by: .seconds(3600)))
        }
        await #expect(throws: CancellationError.self) {
            try await value(of: task, within: .seconds(10), waitingFor: "the pre-cancelled sleep")
        }
    }
}
