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

/// The timer thread as a `TaskExecutor`: tasks that prefer it run there, including when they
/// resume from a sleep, and every job enqueued from any thread runs.
@Suite("TimerFDClock.wakeExecutor")
struct TimerFDClockExecutorTests {
    private let clock = TimerFDClock()

    /// The name of the thread running the caller, from /proc (prctl names it; see DedicatedThread).
    static func currentThreadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTaskThatPrefersItRunsOnTheTimerThreadAndResumesThereFromASleep() async throws {
        let executor = try #require(TimerFDClock.wakeExecutor)
        let task = Task(executorPreference: executor) { [clock] in
            let before = Self.currentThreadName()
            try await clock.sleep(until: clock.now.advanced(by: .milliseconds(5)))
            return (before, Self.currentThreadName())
        }
        let (before, after) = try await value(of: task, within: hangGuard, waitingFor: "a task on the timer thread")
        #expect(before == "alarmd-timer")
        #expect(after == "alarmd-timer")
    }

    /// A task without the preference is not moved there: sleeps resume on Swift's pool.
    @Test func aTaskWithoutThePreferenceResumesElsewhere() async throws {
        let task = Task { [clock] in
            try await clock.sleep(until: clock.now.advanced(by: .milliseconds(5)))
            return Self.currentThreadName()
        }
        let name = try await value(of: task, within: hangGuard, waitingFor: "a task on the pool")
        #expect(!name.isEmpty)
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
        try await value(of: all, within: hangGuard, waitingFor: "400 tasks on the timer thread")
        #expect(await counter.count == 400)
        #expect(await counter.threads == ["alarmd-timer"])
    }
}

/// A default actor that a task preferring the timer thread has entered is run (drained) on that
/// thread, jobs of other tasks included. A task with an explicit preference for Swift's pool goes
/// back to the pool when it leaves the actor, rather than staying on the timer thread: the daemon
/// runs its services so (AlarmDaemon.run).
///
/// Setting this up holds the timer thread busy for a few milliseconds, and needs the visiting task
/// to start on the pool meanwhile: among the other tests (which keep the pool busy, and whose
/// sleeps the timer thread serves) neither holds, so `scripts/test` runs it alone afterwards, with
/// `ALARMD_TIMER_THREAD_TESTS=1`.
@Suite("Leaving an actor drained on the timer thread",
       .enabled(if: ProcessInfo.processInfo.environment["ALARMD_TIMER_THREAD_TESTS"] == "1",
                "holds the timer thread: run alone by scripts/test with ALARMD_TIMER_THREAD_TESTS=1"))
struct TimerThreadAdoptionTests {
    /// Set by the visiting task just before it calls the actor.
    final class Flag: Sendable {
        /// Set by the holder once it holds the actor.
        let holding = Atomic(false)
        let raised = Atomic(false)
    }

    actor Gate {
        /// Holds the actor, spinning, until `flag` is raised and a little longer, so that the
        /// visitor's call is queued behind this one (on the timer thread: the test's only blocking).
        func hold(until flag: Flag) -> String {
            let thread = TimerFDClockExecutorTests.currentThreadName()
            flag.holding.store(true, ordering: .releasing)
            // Spin only where the test means to: never on a thread of the pool.
            guard thread == "alarmd-timer" else { return thread }
            let start = ContinuousClock.now
            while !flag.raised.load(ordering: .acquiring), ContinuousClock.now - start < .seconds(2) {}
            let raisedAt = ContinuousClock.now
            while ContinuousClock.now - raisedAt < .milliseconds(3) {}
            return thread
        }

        func visit() -> String { TimerFDClockExecutorTests.currentThreadName() }
    }

    @Test func aTaskPreferringThePoolLeavesTheTimerThreadWithTheActor() async throws {
        let executor = try #require(TimerFDClock.wakeExecutor)
        let gate = Gate(), flag = Flag()
        let holder = Task(executorPreference: executor) { await gate.hold(until: flag) }
        defer { holder.cancel() }
        // Let the holder take the actor first. (Not a sleep on TimerFDClock: the holder keeps
        // the timer thread busy.)
        let waitStart = ContinuousClock.now
        while !flag.holding.load(ordering: .acquiring), ContinuousClock.now - waitStart < .seconds(10) {
            try await Task.sleep(for: .milliseconds(1))
        }
        let visitor = Task(executorPreference: globalConcurrentExecutor) { () throws -> (String, String) in
            flag.raised.store(true, ordering: .releasing)
            let onActor = await gate.visit()
            return (onActor, TimerFDClockExecutorTests.currentThreadName())
        }
        let (onActor, afterwards) = try await value(of: visitor, within: hangGuard, waitingFor: "the visitor")
        #expect(await holder.value == "alarmd-timer", "the holder did not run on the timer thread")
        #expect(onActor == "alarmd-timer", "the actor was not drained on the timer thread: the test did not set up what it checks")
        #expect(afterwards != "alarmd-timer")
        #expect(!afterwards.isEmpty)
    }
}
