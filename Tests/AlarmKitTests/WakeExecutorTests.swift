import Dispatch
import Foundation
import MosquittoTestSupport
import Synchronization
import Testing
@testable import AlarmKit

/// A node whose clock has a wake executor waits on it: the alert is carried out there.
@Suite("The clock's wake executor")
struct WakeExecutorTests {
    /// A task executor that runs its jobs on a serial queue marked with a key, and counts them.
    final class MarkedQueueExecutor: TaskExecutor {
        static let marker = DispatchSpecificKey<Bool>()
        let queue = DispatchQueue(label: "wake-executor-test")
        let enqueued = Mutex(0)

        init() {
            queue.setSpecific(key: Self.marker, value: true)
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            enqueued.withLock { $0 += 1 }
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }

        static var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) == true }
    }

    /// `ManualAlarmClock` with a wake executor.
    struct ClockWithExecutor: AlarmClock {
        let manual: ManualAlarmClock
        let wakeExecutor: (any TaskExecutor)?
        var now: Date { manual.now }
        func sleep(until deadline: Date) async throws { try await manual.sleep(until: deadline) }
    }

    /// Records whether each alerting `show` ran on the executor's queue.
    final class ShowRecorder: AlarmNodeDelegate {
        let alertShownOnExecutor = Mutex<[Bool]>([])
        func show(_ engine: AlarmEngine) {
            guard !engine.alerting.isEmpty else { return }
            alertShownOnExecutor.withLock { $0.append(MarkedQueueExecutor.isCurrent) }
        }
        func persist(_ state: NodeState) throws {}
        func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {}
    }

    @Test("The node's waiting task prefers the clock's wake executor, and the alert is shown from it")
    func alertCarriedOutOnWakeExecutor() async throws {
        let executor = MarkedQueueExecutor()
        let clock = ClockWithExecutor(manual: ManualAlarmClock(now: date("2026-11-22T10:00:00Z")), wakeExecutor: executor)
        let recorder = ShowRecorder()
        try await alertOneTimer(clock: clock, manual: clock.manual, delegate: recorder)
        #expect(executor.enqueued.withLock { $0 } > 0)
        #expect(recorder.alertShownOnExecutor.withLock { $0 } == [true])
    }
}
