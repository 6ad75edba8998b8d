import Foundation
import Synchronization
import MosquittoTestSupport
import Testing
@testable import AlarmKit

/// Records what a node asks its delegate to do.
final class RecordingDelegate: AlarmNodeDelegate {
    private let recorded = Mutex<(states: [NodeState], effects: [AlarmEffect])>(([], []))
    let failWrites = Mutex(false)
    /// When set, writes wait for it: a slow disk, so that changes pile up behind one write.
    let slowDisk = Mutex<DispatchSemaphore?>(nil)

    var effects: [AlarmEffect] { recorded.withLock { $0.effects } }
    var writes: Int { recorded.withLock { $0.states.count } }
    var lastState: NodeState? { recorded.withLock { $0.states.last } }

    struct DiskFull: Error {}

    func persist(_ state: NodeState) throws {
        // Runs on the node's writer thread, where blocking is allowed.
        slowDisk.withLock { $0 }?.wait()
        if failWrites.withLock({ $0 }) { throw DiskFull() }
        recorded.withLock { $0.states.append(state) }
    }

    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
        recorded.withLock { $0.effects += effects }
    }
}

@Suite("Restore after a restart, on the manual clock")
struct RestoreTests {
    let start = date("2026-11-22T10:00:00Z")
    let berlin = EngineConfiguration(timeZone: zone("Europe/Berlin"))

    /// The state a node had written when it went down, built with the engine itself (in
    /// `timeZone`, Berlin when nil), naming that zone unless `withoutZone` (as states written before it was kept).
    func stateBeforeShutdown(in timeZone: TimeZone? = nil, withoutZone: Bool = false,
                             _ build: (inout AlarmEngine) throws -> Void) rethrows -> NodeState {
        var engine = AlarmEngine(configuration: timeZone.map { EngineConfiguration(timeZone: $0) } ?? berlin)
        try build(&engine)
        return NodeState(authorization: .authorized, alarms: Array(engine.records.values),
                         timeZone: withoutZone ? nil : engine.configuration.timeZone)
    }

    /// Starts a node on `state` at `now`, lets its timer run once, and returns it.
    func restart(_ state: NodeState, at now: Date, clockTrusted: Bool = true, log: LogRecorder = LogRecorder()) async throws
        -> (LocalAlarmNode, ManualAlarmClock, RecordingDelegate, Task<Void, Never>) {
        let clock = ManualAlarmClock(now: now)
        let delegate = RecordingDelegate()
        let node = LocalAlarmNode(configuration: berlin, state: state, clock: clock, clockTrusted: clockTrusted, delegate: delegate,
                                  logger: log.logger(at: .info))
        let timer = Task { await node.run() }
        // The timer has carried out what was due once it sleeps.
        try await waitUntil("the node's timer to sleep") { clock.sleeperCount > 0 }
        return (node, clock, delegate, timer)
    }

    @Test("A countdown runs on toward its persisted fire date")
    func countdown() async throws {
        let id = UUID()
        let state = try stateBeforeShutdown { try _ = $0.schedule(id: id, configuration: configuration(preAlert: 600), now: start) }
        let (node, clock, _, timer) = try await restart(state, at: start + 300)
        defer { timer.cancel() }
        #expect(await node.documents.first?.nextAlertDate == start + 600)
        clock.advance(to: start + 600)
        _ = try await firstValue(of: node.documentUpdates.stream()) { $0.first?.state == .alerting }
    }

    @Test("A paused alarm stays paused with the same remaining time")
    func paused() async throws {
        let id = UUID()
        let state = try stateBeforeShutdown {
            _ = try $0.schedule(id: id, configuration: configuration(preAlert: 600), now: start)
            _ = try $0.pause(id: id, now: start + 100)
        }
        let (node, _, _, timer) = try await restart(state, at: start + 5000)
        defer { timer.cancel() }
        #expect(await node.documents.first?.presentationState == .paused(.init(totalCountdownDuration: 600, previouslyElapsedDuration: 100)))
        try await node.perform(.resume, id: id)
        #expect(await node.documents.first?.nextAlertDate == start + 5500)
    }

    @Test("An alarm that was alerting alerts again inside its timeout, and is silenced after it")
    func alerting() async throws {
        let id = UUID()
        let state = try stateBeforeShutdown {
            _ = try $0.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
            _ = $0.advance(to: start + 60)
        }
        let (node, clock, delegate, timer) = try await restart(state, at: start + 300)
        defer { timer.cancel() }
        #expect(delegate.effects.contains(.alertStarted(id, sound: .default)))
        #expect(delegate.effects.eventNames == [.alerting])
        clock.advance(to: start + 660)
        _ = try await firstValue(of: node.documentUpdates.stream()) { $0.isEmpty }
        #expect(delegate.effects.eventNames == [.alerting, .silenced, .stopped])
        #expect(await node.flush() == nil)
        #expect(delegate.lastState?.alarms.isEmpty == true)
    }

    @Test("An alarm alerting past its timeout at restart is silenced, not sounded")
    func alertingPastTimeout() async throws {
        let id = UUID()
        let state = try stateBeforeShutdown {
            _ = try $0.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
            _ = $0.advance(to: start + 60)
        }
        let (_, _, delegate, timer) = try await restart(state, at: start + 2000)
        defer { timer.cancel() }
        #expect(!delegate.effects.contains(.alertStarted(id, sound: .default)))
        #expect(delegate.effects.eventNames == [.silenced, .stopped])
    }

    @Test("Downtime: late within the grace alerts with `late`; past it, missed and moved on")
    func downtime() async throws {
        let late = UUID(), missed = UUID(), repeating = UUID()
        let state = try stateBeforeShutdown {
            _ = try $0.schedule(id: late, configuration: configuration(schedule: .fixed(start + 3600)), now: start)
            _ = try $0.schedule(id: missed, configuration: configuration(schedule: .fixed(start + 600)), now: start)
            _ = try $0.schedule(id: repeating, configuration: configuration(schedule: weekly(11, 30, [.sunday, .monday])), now: start)
        }
        // Up again at 11:10 UTC: `late` (11:00 UTC) is 10 minutes late; `missed` (10:10) 60; the
        // weekly one was due at 11:30 Berlin (10:30 UTC), 40 minutes ago.
        let (node, _, delegate, timer) = try await restart(state, at: start + 4200)
        defer { timer.cancel() }
        let alerting = delegate.effects.compactMap { if case .event(let event) = $0, event.name == .alerting { event } else { nil } }
        #expect(alerting.map(\.alarmID) == [late])
        #expect(alerting.first?.details["late"] == .number(600))
        let missedIDs = delegate.effects.compactMap { if case .event(let event) = $0, event.name == .missed { event.alarmID } else { nil } }
        #expect(Set(missedIDs) == [missed, repeating])
        let documents = await node.documents
        #expect(documents.map(\.id) == [late, repeating])
        #expect(documents.last?.nextAlertDate == date("2026-11-23T10:30:00Z"))
    }

    @Test("A relative alarm planned in another zone rings at its local time in the node's zone after a restart")
    func zoneChangedWhileDown() async throws {
        let weekdays = UUID(), fixed = UUID()
        // Planned on a node in UTC: 06:45 on weekdays is Monday 06:45 UTC.
        let state = try stateBeforeShutdown(in: zone("UTC")) {
            _ = try $0.schedule(id: weekdays, configuration: configuration(schedule: weekly(6, 45, [.monday, .tuesday])), now: start)
            _ = try $0.schedule(id: fixed, configuration: configuration(schedule: .fixed(start + 86_400)), now: start)
        }
        #expect(state.alarms.first { $0.id == weekdays }?.nextAlertDate == date("2026-11-23T06:45:00Z"))
        // Up again in Berlin: 06:45 there, 05:45 UTC, on the same Monday; the fixed date stays.
        let (node, _, delegate, timer) = try await restart(state, at: start + 60)
        defer { timer.cancel() }
        let documents = await node.documents
        #expect(documents.first { $0.id == weekdays }?.nextAlertDate == date("2026-11-23T05:45:00Z"))
        #expect(documents.first { $0.id == fixed }?.nextAlertDate == start + 86_400)
        #expect(delegate.effects.contains { if case .changed(let document) = $0 { document.id == weekdays } else { false } })
        try await waitUntil("the replanned alarm to be written") {
            delegate.lastState?.alarms.first { $0.id == weekdays }?.nextAlertDate == date("2026-11-23T05:45:00Z")
        }
    }

    @Test("A zone changed while the node was down moves a one-shot alarm to its next time in the new zone, as a change while it runs does")
    func zoneChangedWhileDownBeforeItRang() async throws {
        let id = UUID()
        // 10:30 on a node in UTC, not rung yet; up again in Berlin at 10:20 UTC (11:20 there): the
        // next 10:30 in Berlin is tomorrow's. (It was reported missed: 10:30 in Berlin had passed.)
        let state = try stateBeforeShutdown(in: zone("UTC")) {
            _ = try $0.schedule(id: id, configuration: configuration(schedule: once(10, 30)), now: start)
        }
        let (node, _, delegate, timer) = try await restart(state, at: start + 1200)
        defer { timer.cancel() }
        #expect(delegate.effects.eventNames.isEmpty)
        #expect(await node.documents.map(\.nextAlertDate) == [date("2026-11-23T09:30:00Z")])
        try await waitUntil("the moved alarm and the zone to be written") {
            delegate.lastState?.timeZone == zone("Europe/Berlin") && delegate.lastState?.alarms.first?.nextAlertDate == date("2026-11-23T09:30:00Z")
        }
    }

    @Test("A zone changed while the node was down: an occurrence in the new zone since the old plan's alert rang late")
    func zoneChangedWhileDownPastTheNewTime() async throws {
        let id = UUID()
        // 19:30 in Tokyo is 10:30 UTC; up again in Berlin at 18:35 UTC, 5 minutes after 19:30 there
        // and after the old plan's 10:30 UTC: it fell due while the node was down, and rings late.
        let state = try stateBeforeShutdown(in: zone("Asia/Tokyo")) {
            _ = try $0.schedule(id: id, configuration: configuration(schedule: once(19, 30)), now: start)
        }
        let (_, _, delegate, timer) = try await restart(state, at: date("2026-11-22T18:35:00Z"))
        defer { timer.cancel() }
        #expect(delegate.effects.event(.alerting)?.details["late"] == .number(300))
    }

    @Test("A state saved without its zone: an occurrence that the node's zone puts in the past is decided as downtime")
    func zoneChangedWhileDownIntoThePast() async throws {
        let id = UUID()
        // 10:30 on a node in UTC; up again in Berlin at 10:20 UTC, where 10:30 was 09:30 UTC:
        // 50 minutes ago, past the grace, so missed, as if the node had been down at 10:30 Berlin.
        let state = try stateBeforeShutdown(in: zone("UTC"), withoutZone: true) {
            _ = try $0.schedule(id: id, configuration: configuration(schedule: once(10, 30)), now: start)
        }
        let (node, _, delegate, timer) = try await restart(state, at: start + 1200)
        defer { timer.cancel() }
        #expect(delegate.effects.eventNames.contains(.missed))
        #expect(!delegate.effects.eventNames.contains(.alerting))
        #expect(await node.documents.isEmpty)
    }

    @Test("While the clock is not trusted, alerts past the grace are held, then missed once it is")
    func untrustedClock() async throws {
        let id = UUID(), soon = UUID()
        let state = try stateBeforeShutdown {
            _ = try $0.schedule(id: id, configuration: configuration(schedule: .fixed(start + 600)), now: start)
            _ = try $0.schedule(id: soon, configuration: configuration(schedule: .fixed(start + 7000)), now: start)
        }
        let log = LogRecorder()
        let (node, _, delegate, timer) = try await restart(state, at: start + 6000, clockTrusted: false, log: log)
        defer { timer.cancel() }
        #expect(delegate.effects.isEmpty)
        #expect(await node.withEngine { $0.heldAlarms } == [id])
        let notice = log.entries.first { $0.message.hasPrefix("alerts held until the clock is synchronized") }
        #expect(notice?.level == .notice && notice?.metadata["alarms"] == "\([id.uuidString])")
        #expect(await node.withEngine { $0.nextDeadline } == start + 7000)
        await node.setClockTrusted(true)
        #expect(delegate.effects.eventNames == [.missed])
        #expect(await node.documents.map(\.id) == [soon])
    }

    @Test("A failed state write is answered with internal; the change is saved by the next write")
    func failedWrite() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        delegate.failWrites.withLock { $0 = true }
        let first = UUID(), second = UUID()
        let error = await #expect(throws: AlarmNodeError.self) {
            try await node.schedule(id: first, configuration: configuration(preAlert: 60))
        }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("not on disk") == true)
        delegate.failWrites.withLock { $0 = false }
        _ = try await node.schedule(id: second, configuration: configuration(preAlert: 60))
        #expect(Set(delegate.lastState?.alarms.map(\.id) ?? []) == [first, second])
    }

    @Test("Each write names the alarms changed since the write before it, so that it need look at no other")
    func writesNameTheirAlarms() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        let first = UUID(), second = UUID()
        _ = try await node.schedule(id: first, configuration: configuration(preAlert: 60))
        #expect(delegate.lastState?.changedAlarms == [first])
        _ = try await node.schedule(id: second, configuration: configuration(preAlert: 60))
        #expect(delegate.lastState?.changedAlarms == [second])
        #expect(Set(delegate.lastState?.alarms.map(\.id) ?? []) == [first, second], "the state is still whole")
        _ = try await node.perform(.cancel, id: first)
        #expect(delegate.lastState?.changedAlarms == [first])
        #expect(delegate.lastState?.alarms.map(\.id) == [second])
        await node.flush()
        #expect(delegate.lastState?.changedAlarms == [], "nothing changed since")
    }

    @Test("After a failed write, saveAfterFailedWrite writes the state again until it is saved, and nothing once it is")
    func saveAfterFailedWrite() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        #expect(await node.saveAfterFailedWrite(), "nothing failed: nothing to write")
        #expect(delegate.writes == 0)
        delegate.failWrites.withLock { $0 = true }
        let id = UUID()
        await #expect(throws: AlarmNodeError.self) {
            try await node.schedule(id: id, configuration: configuration(preAlert: 60))
        }
        #expect(await !node.saveAfterFailedWrite(), "the disk is still full")
        delegate.failWrites.withLock { $0 = false }
        #expect(await node.saveAfterFailedWrite())
        #expect(delegate.lastState?.alarms.map(\.id) == [id])
        let writes = delegate.writes
        #expect(await node.saveAfterFailedWrite())
        #expect(delegate.writes == writes, "a saved state is not written again")
    }

    /// A failed write with nobody waiting leaves the state unsaved and no write running; an
    /// authorization request must start one rather than wait for a write that never comes.
    @Test("An authorization request after a failed write is answered")
    func authorizationAfterFailedWrite() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        delegate.failWrites.withLock { $0 = true }
        await #expect(throws: AlarmNodeError.self) {
            try await node.schedule(id: UUID(), configuration: configuration(preAlert: 60))
        }
        delegate.failWrites.withLock { $0 = false }
        let answer = Task { await node.waitUntilDurable(await node.submit(.requestAuthorization)) }
        let reply = try await withThrowingTaskGroup(of: NodeReply?.self) { group in
            group.addTask { await answer.value }
            group.addTask { try await Task.sleep(for: .seconds(30)); return nil }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        #expect(reply == .authorization(.authorized))
    }

    @Test("Changes submitted together are written in order, and each reply waits for its own write")
    func eachChangeIsWrittenBeforeItsReply() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        // The first write is held up until all 50 changes are applied: the others wait behind it.
        let disk = DispatchSemaphore(value: 0)
        delegate.slowDisk.withLock { $0 = disk }
        var submissions: [LocalAlarmNode.Submission] = []
        for _ in 0..<50 {
            submissions.append(await node.submit(.schedule(id: UUID(), configuration: configuration(preAlert: 60), group: nil)))
        }
        delegate.slowDisk.withLock { $0 = nil }
        disk.signal()
        for submission in submissions {
            guard case .alarm(let document?) = await node.waitUntilDurable(submission) else {
                Issue.record("no alarm in the reply")
                continue
            }
            // Durable: the last write holds it.
            #expect(delegate.lastState?.alarms.contains { $0.id == document.id } == true)
        }
        #expect(delegate.writes == 50)
    }

    @Test("A reply that changes nothing (a list, the same schedule again) waits for the write of the change before it")
    func listWaitsForEarlierWrite() async throws {
        let (node, _, delegate, timer) = try await restart(NodeState(authorization: .authorized), at: start)
        defer { timer.cancel() }
        let disk = DispatchSemaphore(value: 0)
        delegate.slowDisk.withLock { $0 = disk }
        let id = UUID()
        _ = await node.submit(.schedule(id: id, configuration: configuration(preAlert: 60), group: nil))
        let list = await node.submit(.list)
        let answered = Mutex<NodeReply?>(nil)
        node.whenDurable(list) { reply in answered.withLock { $0 = reply } }
        // A duplicated delivery of the schedule changes nothing, but shows the alarm too.
        let again = await node.submit(.schedule(id: id, configuration: configuration(preAlert: 60), group: nil))
        node.whenDurable(again) { reply in answered.withLock { $0 = reply } }
        // The schedule's write is held up: neither reply, which show its alarm, may be given.
        #expect(answered.withLock { $0 } == nil)
        delegate.slowDisk.withLock { $0 = nil }
        disk.signal()
        guard case .alarms(let documents) = await node.waitUntilDurable(list) else {
            Issue.record("no alarms in the reply")
            return
        }
        #expect(documents.map(\.id) == [id])
        #expect(delegate.lastState?.alarms.map(\.id) == [id])
        #expect(answered.withLock { $0 } != nil)
    }
}

@Suite("Clock steps through the clock abstraction")
struct ClockStepTests {
    let start = date("2026-11-22T10:00:00Z")

    /// A node on a manual clock whose wall clock is then stepped, as the daemon's step watcher reports.
    @Test("Steps of +1 h, -1 h and from 1970 to now keep a timer's remaining time", arguments: [3600.0, -3600.0, 1_795_000_000.0])
    func timerSurvivesSteps(step: TimeInterval) async throws {
        let boot = step > 100_000 ? Date(timeIntervalSince1970: 60) : start
        let clock = ManualAlarmClock(now: boot)
        let node = LocalAlarmNode(configuration: .init(timeZone: zone("Europe/Berlin")), clock: clock)
        let timer = Task { await node.run() }
        defer { timer.cancel() }
        let id = UUID()
        _ = try await node.schedule(id: id, configuration: configuration(preAlert: 300))
        clock.advance(by: 100)
        clock.advance(to: clock.now + step)
        await node.wallClockStepped(by: step)
        #expect(await node.documents.first?.nextAlertDate == clock.now + 200)
        clock.advance(by: 199)
        #expect(await node.documents.first?.state == .countdown)
        clock.advance(by: 1)
        _ = try await firstValue(of: node.documentUpdates.stream()) { $0.first?.state == .alerting }
    }

    /// The daemon's clock turns a wall-clock deadline into a wait on the monotonic clock when
    /// the wait starts; a forward step must make the node plan its wait again, or a fixed-date
    /// alarm would ring as late as the step, even when the step changes no alarm.
    @Test("A forward step re-plans the wait for a fixed-date alarm")
    func forwardStepReplansTheMonotonicWait() async throws {
        let clock = MonotonicWaitClock(now: start)
        let node = LocalAlarmNode(configuration: .init(timeZone: zone("Europe/Berlin")), clock: clock)
        let timer = Task { await node.run() }
        defer { timer.cancel() }
        _ = try await node.schedule(id: UUID(), configuration: configuration(schedule: .fixed(start + 3600)))
        while clock.latestWait != start + 3600 { await Task.yield() }
        clock.step(by: 1800)
        await node.wallClockStepped(by: 1800)
        clock.elapse(1800)
        _ = try await firstValue(of: node.documentUpdates.stream()) { $0.first?.state == .alerting }
    }

    @Test("A backward step after an alert never makes the same occurrence alert twice")
    func backwardStep() async throws {
        let clock = ManualAlarmClock(now: date("2026-11-23T05:00:00Z"))
        let node = LocalAlarmNode(configuration: .init(timeZone: zone("Europe/Berlin")), clock: clock)
        let timer = Task { await node.run() }
        defer { timer.cancel() }
        let id = UUID()
        _ = try await node.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday, .tuesday])))
        clock.advance(to: date("2026-11-23T06:00:00Z"))
        _ = try await firstValue(of: node.documentUpdates.stream()) { $0.first?.state == .alerting }
        try await node.perform(.stop, id: id)
        clock.advance(to: date("2026-11-23T05:30:00Z"))
        await node.wallClockStepped(by: -1800)
        #expect(await node.documents.first?.nextAlertDate == date("2026-11-24T06:00:00Z"))
    }
}

/// A test clock that waits as `SystemAlarmClock` does: a wall-clock deadline becomes a wait of
/// fixed length on a monotonic clock when the wait starts. `step(by:)` moves only the wall
/// clock, as `date -s` does; `elapse(_:)` moves both.
final class MonotonicWaitClock: AlarmClock {
    private let monotonic: ManualAlarmClock
    private let wallOffset = Mutex<TimeInterval>(0)
    private let latestDeadline = Mutex<Date?>(nil)

    /// The wall-clock deadline of the latest wait that started.
    var latestWait: Date? { latestDeadline.withLock { $0 } }

    init(now: Date) {
        monotonic = ManualAlarmClock(now: now)
    }

    var now: Date { monotonic.now + wallOffset.withLock { $0 } }

    func sleep(until deadline: Date) async throws {
        latestDeadline.withLock { $0 = deadline }
        try await monotonic.sleep(until: monotonic.now + deadline.timeIntervalSince(now))
    }

    func step(by seconds: TimeInterval) {
        wallOffset.withLock { $0 += seconds }
    }

    func elapse(_ seconds: TimeInterval) {
        monotonic.advance(by: seconds)
    }
}
