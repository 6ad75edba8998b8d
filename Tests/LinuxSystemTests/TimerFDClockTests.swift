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
        try await value(of: Task { try await clock.sleep(until: past) }, within: .seconds(10), waitingFor: "a sleep until a past deadline")
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

/// The timer thread as a `TaskExecutor`: tasks that prefer it run there, including when they
/// resume from a sleep, and every job enqueued from any thread runs.
@Suite("TimerFDClock.wakeExecutor")
struct TimerFDClockExecutorTests {
    private let clock = TimerFDClock()

    /// The name of the thread running the caller, from /proc (prctl names it; see DedicatedThread).
    private static func currentThreadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTaskThatPrefersItRunsOnTheTimerThreadAndResumesThereFromASleep() async throws {
        let executor = try #require(TimerFDClock.wakeExecutor)
        let task = Task(executorPreference: executor) { [clock] in
            let before = Self.currentThreadName()
            try await clock.sleep(until: clock.now.advanced(by: .milliseconds(5)))
            return (before, Self.currentThreadName())
        }
        let (before, after) = try await value(of: task, within: .seconds(10), waitingFor: "a task on the timer thread")
        #expect(before == "alarmd-timer")
        #expect(after == "alarmd-timer")
    }

    /// A task without the preference is not moved there: sleeps resume on Swift's pool.
    @Test func aTaskWithoutThePreferenceResumesElsewhere() async throws {
        let task = Task { [clock] in
            try await clock.sleep(until: clock.now.advanced(by: .milliseconds(5)))
            return Self.currentThreadName()
        }
        let name = try await value(of: task, within: .seconds(10), waitingFor: "a task on the pool")
        #expect(name != "alarmd-timer")
    }

    private actor Counter {
        var count = 0
        var threads: Set<String> = []
        func increment() {
            count += 1
            threads.insert(TimerFDClockExecutorTests.currentThreadName())
        }
    }

    /// Many tasks enqueued at once from the pool's threads, some sleeping first, each calling a
    /// default actor: every job runs (none is stranded by the thread going back to poll(2) as
    /// one arrives), and the actor's code runs on the timer thread with them.
    @Test func everyJobEnqueuedFromAnyThreadRuns() async throws {
        let executor = try #require(TimerFDClock.wakeExecutor)
        let counter = Counter()
        let all = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<400 {
                    group.addTask {
                        let task = Task(executorPreference: executor) { [clock] in
                            if index.isMultiple(of: 4) { try await clock.sleep(until: clock.now.advanced(by: .microseconds(index * 10))) }
                            await counter.increment()
                        }
                        try await task.value
                    }
                }
                try await group.waitForAll()
            }
        }
        try await value(of: all, within: .seconds(20), waitingFor: "400 tasks on the timer thread")
        #expect(await counter.count == 400)
        #expect(await counter.threads == ["alarmd-timer"])
    }
}
