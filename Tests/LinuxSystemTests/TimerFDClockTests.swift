import Foundation
import Glibc
import Synchronization
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

    /// Started out of deadline order, so the timer is re-armed earlier and later; whatever the
    /// load (a sleeper may even start after its deadline), none wakes early and none is lost.
    @Test func everySleeperWakesAtOrAfterItsOwnDeadlineWhateverTheOrderTheyStartedIn() async throws {
        let start = clock.now
        let wakes = try await withThrowingTaskGroup(of: (deadline: TimerFDClock.Instant, woke: TimerFDClock.Instant).self) { group in
            for milliseconds in [40, 10, 25] {
                group.addTask {
                    let deadline = start.advanced(by: .milliseconds(milliseconds))
                    try await clock.sleep(until: deadline)
                    return (deadline, clock.now)
                }
            }
            var wakes: [(deadline: TimerFDClock.Instant, woke: TimerFDClock.Instant)] = []
            for try await wake in group { wakes.append(wake) }
            return wakes
        }
        #expect(wakes.count == 3)
        for wake in wakes { #expect(wake.woke >= wake.deadline) }
    }

    /// A deadline an hour past must not be read as one far ahead (a negative wait wrapping
    /// around): the sleep has to return, which the guard's 10 s make visible as a failure.
    @Test func aDeadlineInThePastReturnsAtOnce() async throws {
        let past = clock.now.advanced(by: .seconds(-3600))
        try await value(of: Task { try await clock.sleep(until: past) }, within: hangGuard, waitingFor: "a sleep until a past deadline")
    }

    @Test func cancellingAFarSleepThrowsCancellationPromptlyAndLeavesOthersOnTime() async throws {
        let far = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(3600))) }
        // The near sleep is registered after the far one, so it re-arms the timer earlier; the
        // far one's cancellation must re-arm it without losing the near one.
        let nearDeadline = clock.now.advanced(by: .milliseconds(30))
        let near = Task { try await clock.sleep(until: nearDeadline) }
        far.cancel()
        await #expect(throws: CancellationError.self) { try await far.value }
        try await value(of: near, within: hangGuard, waitingFor: "the near sleep")
        #expect(clock.now >= nearDeadline)
    }

    @Test func aTaskCancelledBeforeItSleepsThrowsAtOnce() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now.advanced(by: .seconds(3600)))
        }
        await #expect(throws: CancellationError.self) {
            try await value(of: task, within: hangGuard, waitingFor: "the pre-cancelled sleep")
        }
    }
}
