import Foundation
import Synchronization
import MosquittoTestSupport
import Testing
@testable import AlarmKit

/// A clock that records every deadline the node asked to sleep until.
final class RecordingClock: AlarmClock {
    let base: ManualAlarmClock
    /// Every deadline asked for so far, oldest first.
    let deadlines = Broadcast<[Date]>([])

    init(now: Date) { base = ManualAlarmClock(now: now) }

    var now: Date { base.now }

    func sleep(until deadline: Date) async throws {
        deadlines.send(deadlines.value + [deadline])
        try await base.sleep(until: deadline)
    }

    /// Waits until the node has asked to sleep until `deadline`.
    func waitForSleep(until deadline: Date) async throws {
        _ = try await firstValue(of: deadlines.stream()) { $0.last == deadline }
    }
}

/// An authorization prompt answered by the test.
final class ScriptedPrompt: AuthorizationPrompt {
    private let answer: AlarmManager.AuthorizationState
    private let asked = Mutex(0)
    init(answer: AlarmManager.AuthorizationState) { self.answer = answer }
    var timesAsked: Int { asked.withLock { $0 } }
    func requestDecision() async -> AlarmManager.AuthorizationState {
        asked.withLock { $0 += 1 }
        return answer
    }
}

/// An authorization prompt that waits for the test's answer; cancelled, it ends without one.
final class AwaitedPrompt: AuthorizationPrompt {
    let (answers, answer) = AsyncStream.makeStream(of: AlarmManager.AuthorizationState.self)
    let (asked, ask) = AsyncStream.makeStream(of: Void.self)
    func requestDecision() async -> AlarmManager.AuthorizationState {
        ask.yield()
        for await answer in answers { return answer }
        return .notDetermined
    }
}

@Suite("In-process AlarmManager")
struct ManagerTests {
    let start = date("2026-11-22T10:00:00Z")

    /// Runs `body` with a node whose timer runs on a manual clock, then stops the timer.
    func withNode(
        state: NodeState = NodeState(authorization: .authorized),
        prompt: (any AuthorizationPrompt)? = nil,
        _ body: (AlarmManager, RecordingClock, LocalAlarmNode) async throws -> Void
    ) async throws {
        let clock = RecordingClock(now: start)
        let node = LocalAlarmNode(configuration: .init(timeZone: zone("Europe/Berlin")), state: state,
                                  clock: clock, authorizationPrompt: prompt)
        let timer = Task { await node.run() }
        defer { timer.cancel() }
        try await body(AlarmManager(node: node), clock, node)
    }

    @Test("A timer alerts when the manual clock reaches its fire date, seen by two observers at once")
    func twoObservers() async throws {
        try await withNode { manager, clock, _ in
            let id = UUID()
            async let first = firstValue(of: manager.alarmUpdates) { $0.first?.state == .alerting }
            async let second = firstValue(of: manager.alarmUpdates) { $0.first?.state == .alerting }
            let alarm = try await manager.schedule(id: id, configuration: configuration(preAlert: 60))
            #expect(alarm.state == .countdown)
            #expect(try manager.alarms.map(\.id) == [id])
            clock.base.advance(by: 60)
            let (seenFirst, seenSecond) = try await (first, second)
            #expect(seenFirst.map(\.id) == [id])
            #expect(seenSecond.map(\.id) == [id])
        }
    }

    @Test("Each new observer, of the alarms or of their full documents, first receives the current list, then each change")
    func observersStartWithCurrentList() async throws {
        try await withNode { manager, clock, _ in
            let id = UUID()
            try await manager.schedule(id: id, configuration: configuration(preAlert: 600))
            var alarms = manager.alarmUpdates.makeAsyncIterator()
            var documents = manager.alarmDocumentUpdates.makeAsyncIterator()
            #expect(await alarms.next()?.map(\.id) == [id])
            #expect(await documents.next()?.map(\.nextAlertDate) == [start + 600])
            clock.base.advance(by: 100)
            try await manager.pause(id: id)
            #expect(await alarms.next()?.map(\.state) == [.paused])
            let paused = try #require(await documents.next()?.first)
            #expect(paused.id == id && paused.state == .paused && paused.nextAlertDate == nil)
        }
    }

    @Test("The timer sleeps until the next due instant only, and re-plans after each change")
    func sleepsUntilNextDeadline() async throws {
        try await withNode { manager, clock, _ in
            try await clock.waitForSleep(until: .distantFuture)
            #expect(clock.deadlines.value == [.distantFuture])
            let id = UUID()
            try await manager.schedule(id: id, configuration: configuration(schedule: .fixed(start + 7200), preAlert: 600))
            try await manager.schedule(id: UUID(), configuration: configuration(schedule: .fixed(start + 86_400)))
            try await clock.waitForSleep(until: start + 6600)
            clock.base.advance(by: 6600)
            _ = try await firstValue(of: manager.alarmUpdates) { $0.first?.state == .countdown }
            try await clock.waitForSleep(until: start + 7200)
            // Nothing else was asked for: no periodic wake-ups between the due instants.
            #expect(Set(clock.deadlines.value).isSubset(of: [.distantFuture, start + 6600, start + 7200]))
        }
    }

    @Test("Pause and resume through the manager keep the remaining time")
    func pauseResume() async throws {
        try await withNode { manager, clock, _ in
            let id = UUID()
            try await manager.schedule(id: id, configuration: configuration(preAlert: 600))
            clock.base.advance(by: 100)
            try await manager.pause(id: id)
            clock.base.advance(by: 1000)
            try await manager.resume(id: id)
            let document = try #require(try manager.alarmDocuments.first)
            #expect(document.nextAlertDate == start + 1100 + 500)
        }
    }

    @Test("Errors come back typed: not found, invalid state")
    func errors() async throws {
        try await withNode { manager, _, _ in
            let unknown = UUID()
            await #expect(throws: AlarmNodeError.notFound(unknown)) { try await manager.stop(id: unknown) }
            let id = UUID()
            try await manager.schedule(id: id, configuration: configuration(preAlert: 60))
            let error = await #expect(throws: AlarmNodeError.self) { try await manager.resume(id: id) }
            #expect(error?.code == .invalidState)
        }
    }

    @Test("A requester cancelled while another waits for the same prompt leaves the prompt to the other")
    func cancelledRequesterLeavesSharedPrompt() async throws {
        let prompt = AwaitedPrompt()
        try await withNode(state: NodeState(authorization: .notDetermined), prompt: prompt) { _, _, node in
            let first = Task { await node.requestAuthorization() }
            var asked = prompt.asked.makeAsyncIterator()
            _ = await asked.next()
            let second = Task { await node.requestAuthorization() }
            // The second requester joins the prompt on the node's actor.
            for _ in 0..<100 { await Task.yield() }
            first.cancel()
            prompt.answer.yield(.authorized)
            #expect(await second.value == .authorized)
            #expect(await node.authorizationState == .authorized)
        }
    }

    @Test("The first schedule while undetermined prompts once; the decision is kept and published")
    func authorizationPrompt() async throws {
        let prompt = ScriptedPrompt(answer: .authorized)
        try await withNode(state: NodeState(authorization: .notDetermined), prompt: prompt) { manager, _, _ in
            #expect(manager.authorizationState == .notDetermined)
            async let decided = firstValue(of: manager.authorizationUpdates) { $0 == .authorized }
            try await manager.schedule(id: UUID(), configuration: configuration(preAlert: 60))
            let decision = try await decided
            #expect(decision == .authorized)
            try await manager.schedule(id: UUID(), configuration: configuration(preAlert: 60))
            #expect(prompt.timesAsked == 1)
            let again = try await manager.requestAuthorization()
            #expect(again == .authorized)
        }
    }

    @Test("A denied node refuses to schedule with unauthorized")
    func authorizationDenied() async throws {
        try await withNode(state: NodeState(authorization: .notDetermined), prompt: ScriptedPrompt(answer: .denied)) { manager, _, _ in
            let decision = try await manager.requestAuthorization()
            #expect(decision == .denied)
            let error = await #expect(throws: AlarmNodeError.self) {
                try await manager.schedule(id: UUID(), configuration: configuration(preAlert: 60))
            }
            #expect(error?.code == .unauthorized)
            #expect(try manager.alarms.isEmpty)
        }
    }

    @Test("An unanswered prompt leaves the node undetermined and refuses")
    func authorizationUnanswered() async throws {
        try await withNode(state: NodeState(authorization: .notDetermined), prompt: ScriptedPrompt(answer: .notDetermined)) { manager, _, _ in
            await #expect(throws: AlarmNodeError.unauthorized(.notDetermined)) {
                try await manager.schedule(id: UUID(), configuration: configuration(preAlert: 60))
            }
            #expect(manager.authorizationState == .notDetermined)
        }
    }

    @Test("What fell due before a command is carried out as the clock's, before it: its events do not name the command")
    func dueBeforeCommandIsTheClocks() async throws {
        let clock = ManualAlarmClock(now: start)
        let delegate = RecordingDelegate()
        // No timer runs: the command comes just after the pre-alert fell due, before the timer woke.
        let node = LocalAlarmNode(configuration: .init(timeZone: zone("Europe/Berlin")), state: NodeState(authorization: .authorized),
                                  clock: clock, delegate: delegate)
        let early = UUID()
        _ = await node.submit(.schedule(id: early, configuration: configuration(schedule: .fixed(start + 600), preAlert: 60), group: nil))
        clock.advance(to: start + 540)
        _ = await node.submit(.schedule(id: UUID(), configuration: configuration(preAlert: 300), group: nil))
        let countdowns = delegate.effects.compactMap { effect -> AlarmEvent? in
            guard case .event(let event) = effect, event.name == .countdown, event.alarmID == early else { return nil }
            return event
        }
        #expect(countdowns.count == 1)
        #expect(countdowns.first?.details["source"] == nil)
    }
}
