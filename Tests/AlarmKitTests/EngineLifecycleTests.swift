import Foundation
import Testing
@testable import AlarmKit

@Suite("Engine lifecycle")
struct EngineLifecycleTests {
    let start = date("2026-11-22T10:00:00Z")
    let id = UUID()
    var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))

    // MARK: schedule

    @Test("A timer starts its countdown at once")
    mutating func timerCountsDown() throws {
        let effects = try engine.schedule(id: id, configuration: configuration(preAlert: 600, postAlert: 300), now: start)
        #expect(effects.eventNames == [.scheduled, .countdown])
        let document = try #require(engine.document(for: id))
        #expect(document.state == .countdown)
        #expect(document.nextAlertDate == start + 600)
        #expect(document.presentationState == .countdown(.init(totalCountdownDuration: 600, previouslyElapsedDuration: 0,
                                                               startDate: start, fireDate: start + 600)))
        #expect(engine.nextDeadline == start + 600)
    }

    @Test("Neither a schedule nor a preAlert is an invalid configuration")
    mutating func timerNeedsPreAlert() {
        #expect(throws: AlarmNodeError.invalidConfiguration(
            field: "configuration.countdownDuration.preAlert",
            reason: "an alarm with no schedule is a timer and needs a preAlert duration; or give it a schedule")) {
            try engine.schedule(id: id, configuration: configuration(postAlert: 300), now: start)
        }
        #expect(engine.records.isEmpty)
    }

    @Test("A fixed date in the past is refused")
    mutating func fixedPast() {
        let error = #expect(throws: AlarmNodeError.self) {
            try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start - 1)), now: start)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.field == "configuration.schedule.fixed")
    }

    @Test("A scheduled alarm counts down its pre-alert, then alerts on time")
    mutating func preAlertThenAlert() throws {
        let alertDate = start + 3600
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(alertDate), preAlert: 600), now: start)
        #expect(engine.records[id]?.state == .scheduled)
        #expect(engine.nextDeadline == alertDate - 600)
        #expect(engine.advance(to: alertDate - 601).isEmpty)

        let countdown = engine.advance(to: alertDate - 600)
        #expect(countdown.eventNames == [.countdown])
        #expect(engine.document(for: id)?.presentationState == .countdown(.init(
            totalCountdownDuration: 600, previouslyElapsedDuration: 0, startDate: alertDate - 600, fireDate: alertDate)))

        let alert = engine.advance(to: alertDate)
        #expect(alert.eventNames == [.alerting])
        #expect(alert.event(.alerting)?.details["late"] == .number(0))
        #expect(alert.contains(.alertStarted(id, sound: .default)))
        #expect(engine.document(for: id)?.presentationState == .alert(.init(time: .init(hour: 12, minute: 0))))
        #expect(engine.document(for: id)?.nextAlertDate == nil)
    }

    @Test("Scheduling inside the pre-alert window starts the countdown at once")
    mutating func scheduleInsidePreAlert() throws {
        let effects = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start + 60), preAlert: 600), now: start)
        #expect(effects.eventNames == [.scheduled, .countdown])
        #expect(engine.document(for: id)?.presentationState == .countdown(.init(
            totalCountdownDuration: 600, previouslyElapsedDuration: 0, startDate: start - 540, fireDate: start + 60)))
    }

    @Test("The same configuration again changes nothing and keeps the countdown running")
    mutating func idempotentSchedule() throws {
        let timer = configuration(preAlert: 600)
        _ = try engine.schedule(id: id, configuration: timer, now: start)
        let again = try engine.schedule(id: id, configuration: timer, now: start + 100)
        #expect(again.isEmpty)
        #expect(engine.document(for: id)?.nextAlertDate == start + 600)
    }

    @Test("A different configuration replaces the alarm")
    mutating func replaceSchedule() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600), now: start)
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, title: "Tea"), now: start + 100)
        #expect(engine.records.count == 1)
        #expect(engine.document(for: id)?.nextAlertDate == start + 160)
        #expect(engine.document(for: id)?.configuration.attributes.presentation.alert.title == "Tea")
    }

    @Test("One alarm more than the limit is refused; replacing one is not")
    mutating func limit() throws {
        engine.configuration.maximumAlarms = 2
        _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: start)
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
        #expect(throws: AlarmManager.AlarmError.maximumLimitReached) {
            try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: start)
        }
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 90), now: start)
        #expect(engine.records.count == 2)
    }

    // MARK: cancel

    @Test("Cancel removes an alarm in any state", arguments: Alarm.State.allCases)
    mutating func cancelAnyState(state: Alarm.State) throws {
        try bring(to: state, configuration: configuration(schedule: weekly(7, 0, [.monday]), preAlert: 60, postAlert: 60))
        let effects = try engine.cancel(id: id, now: engine.records[id].map { _ in start } ?? start)
        #expect(effects.eventNames == [.cancelled])
        #expect(effects.removedIDs == [id])
        #expect(effects.contains(.alertEnded(id)) == (state == .alerting))
        #expect(engine.records.isEmpty)
    }

    // MARK: stop

    @Test("Stop removes an alerting one-shot alarm and runs its stop intent")
    mutating func stopOneShot() throws {
        let intent = AlarmIntent.publish(topic: "home/lights", payload: "ON {alarmID}")
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, stopIntent: intent), now: start)
        _ = engine.advance(to: start + 60)
        let effects = try engine.stop(id: id, now: start + 61)
        #expect(effects.eventNames == [.stopped, .intent])
        #expect(effects.contains(.runIntent(intent, alarmID: id)))
        #expect(effects.contains(.alertEnded(id)))
        #expect(effects.removedIDs == [id])
        #expect(intent.payload(for: id) == "ON \(id.uuidString)")
    }

    @Test("Stop sends a repeating alarm back to its next occurrence")
    mutating func stopRepeating() throws {
        // Sunday 2026-11-22 10:00 UTC; Monday and Wednesday at 07:00 Berlin.
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday, .wednesday])), now: start)
        let monday = date("2026-11-23T06:00:00Z")
        #expect(engine.nextDeadline == monday)
        _ = engine.advance(to: monday)
        #expect(engine.records[id]?.state == .alerting)
        let effects = try engine.stop(id: id, now: monday + 30)
        #expect(effects.removedIDs.isEmpty)
        #expect(engine.records[id]?.state == .scheduled)
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-25T06:00:00Z"))
    }

    @Test("Stop is refused unless the alarm is alerting", arguments: [Alarm.State.scheduled, .countdown, .paused])
    mutating func stopRefused(state: Alarm.State) throws {
        try bring(to: state, configuration: configuration(schedule: weekly(7, 0, [.monday]), preAlert: 60))
        let before = engine.records
        #expect(throws: AlarmNodeError.self) { try engine.stop(id: id, now: start) }
        #expect(engine.records == before)
    }

    // MARK: countdown (snooze)

    @Test("Snooze counts down postAlert")
    mutating func snoozePostAlert() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600, postAlert: 300), now: start)
        _ = engine.advance(to: start + 600)
        let effects = try engine.countdown(id: id, now: start + 610)
        #expect(effects.eventNames == [.snoozed, .countdown])
        #expect(effects.contains(.alertEnded(id)))
        #expect(engine.document(for: id)?.nextAlertDate == start + 910)
        #expect(engine.advance(to: start + 910).eventNames == [.alerting])
    }

    @Test("Snooze falls back to preAlert when postAlert is nil (a timer's repeat)")
    mutating func snoozeFallsBack() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 120), now: start)
        _ = engine.advance(to: start + 120)
        _ = try engine.countdown(id: id, now: start + 125)
        #expect(engine.document(for: id)?.nextAlertDate == start + 245)
    }

    @Test("Snooze with neither duration is an invalid state")
    mutating func snoozeWithoutDurations() throws {
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start + 60)), now: start)
        _ = engine.advance(to: start + 60)
        let error = #expect(throws: AlarmNodeError.self) { try engine.countdown(id: id, now: start + 61) }
        #expect(error?.code == .invalidState)
        #expect(engine.records[id]?.state == .alerting)
    }

    @Test("Snooze is refused unless the alarm is alerting", arguments: [Alarm.State.scheduled, .countdown, .paused])
    mutating func snoozeRefused(state: Alarm.State) throws {
        try bring(to: state, configuration: configuration(schedule: weekly(7, 0, [.monday]), preAlert: 60, postAlert: 60))
        #expect(throws: AlarmNodeError.self) { try engine.countdown(id: id, now: start) }
    }

    @Test("A refusal for the alarm's state says what would do instead")
    mutating func refusalsAdvise() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600), now: start)
        let stop = #expect(throws: AlarmNodeError.self) { try engine.stop(id: id, now: start) }
        #expect(stop?.message.hasSuffix("is countdown: it is not ringing (cancel would end it)") == true)
        let snooze = #expect(throws: AlarmNodeError.self) { try engine.countdown(id: id, now: start) }
        #expect(snooze?.message.hasPrefix("countdown (snooze) needs an alarm in state alerting") == true)
        let resume = #expect(throws: AlarmNodeError.self) { try engine.resume(id: id, now: start) }
        #expect(resume?.message.hasSuffix(": only a paused alarm resumes") == true)
        _ = try engine.pause(id: id, now: start + 1)
        let pause = #expect(throws: AlarmNodeError.self) { try engine.pause(id: id, now: start + 2) }
        #expect(pause?.message.hasSuffix("is paused: it is paused already; resume continues it") == true)
    }

    @Test("Stop of a snoozed alarm says that it rings again, and what cancel would end")
    mutating func stopOfASnooze() throws {
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday]), postAlert: 540), now: start)
        let alertDate = try #require(engine.records[id]?.nextAlertDate)
        _ = engine.advance(to: alertDate)
        _ = try engine.countdown(id: id, now: alertDate + 5)
        let stop = #expect(throws: AlarmNodeError.self) { try engine.stop(id: id, now: start) }
        #expect(stop?.message.hasSuffix("it is snoozed, not ringing: it rings again when its countdown ends; the node's stop button ends the snooze (cancel would end it for good, every repeat too)") == true)
    }

    // MARK: pause and resume

    @Test("Pause keeps the elapsed time; resume counts down the rest")
    mutating func pauseResume() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600), now: start)
        #expect(try engine.pause(id: id, now: start + 120).eventNames == [.paused])
        #expect(engine.document(for: id)?.presentationState == .paused(.init(totalCountdownDuration: 600, previouslyElapsedDuration: 120)))
        #expect(engine.document(for: id)?.nextAlertDate == nil)
        #expect(engine.nextDeadline == nil)
        #expect(engine.advance(to: start + 10_000).isEmpty)

        #expect(try engine.resume(id: id, now: start + 1000).eventNames == [.resumed])
        #expect(engine.document(for: id)?.presentationState == .countdown(.init(
            totalCountdownDuration: 600, previouslyElapsedDuration: 120, startDate: start + 1000, fireDate: start + 1480)))

        _ = try engine.pause(id: id, now: start + 1100)
        #expect(engine.document(for: id)?.presentationState == .paused(.init(totalCountdownDuration: 600, previouslyElapsedDuration: 220)))
        _ = try engine.resume(id: id, now: start + 2000)
        #expect(engine.document(for: id)?.nextAlertDate == start + 2380)
        #expect(engine.advance(to: start + 2380).eventNames == [.alerting])
    }

    @Test("Pause is refused unless counting down", arguments: [Alarm.State.scheduled, .paused, .alerting])
    mutating func pauseRefused(state: Alarm.State) throws {
        try bring(to: state, configuration: configuration(schedule: weekly(7, 0, [.monday]), preAlert: 60))
        #expect(throws: AlarmNodeError.self) { try engine.pause(id: id, now: start) }
    }

    @Test("Resume is refused unless paused", arguments: [Alarm.State.scheduled, .countdown, .alerting])
    mutating func resumeRefused(state: Alarm.State) throws {
        try bring(to: state, configuration: configuration(schedule: weekly(7, 0, [.monday]), preAlert: 60))
        #expect(throws: AlarmNodeError.self) { try engine.resume(id: id, now: start) }
    }

    @Test("Every operation on an unknown id is not found", arguments: AlarmOperation.allCases)
    mutating func unknownID(operation: AlarmOperation) {
        let unknown = UUID()
        #expect(throws: AlarmNodeError.notFound(unknown)) {
            try engine.perform(operation, id: unknown, now: start)
        }
    }

    // MARK: alerting

    @Test("The secondary button snoozes with .countdown behaviour")
    mutating func secondaryCountdown() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, postAlert: 30, secondary: .countdown), now: start)
        _ = engine.advance(to: start + 60)
        #expect(try engine.secondaryAction(id: id, now: start + 61).eventNames == [.snoozed, .countdown])
        #expect(engine.document(for: id)?.nextAlertDate == start + 91)
    }

    @Test("The secondary button runs the custom intent and leaves the alarm alerting")
    mutating func secondaryCustom() throws {
        let intent = AlarmIntent.publish(topic: "home/coffee", payload: "brew")
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, secondary: .custom, secondaryIntent: intent), now: start)
        _ = engine.advance(to: start + 60)
        let effects = try engine.secondaryAction(id: id, now: start + 61)
        #expect(effects == [.runIntent(intent, alarmID: id), .event(AlarmEvent(.intent, alarmID: id, at: start + 61, details: ["topic": .string("home/coffee")]))])
        #expect(engine.records[id]?.state == .alerting)
    }

    @Test("An alert nobody acts on is silenced after the timeout, as stop")
    mutating func autoSilenceStops() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
        _ = engine.advance(to: start + 60)
        #expect(engine.nextDeadline == start + 660)
        #expect(engine.advance(to: start + 659).isEmpty)
        let effects = engine.advance(to: start + 660)
        #expect(effects.eventNames == [.silenced, .stopped])
        #expect(effects.event(.silenced)?.details == ["action": .string("stop"), "title": .string("Wake up")], "named: a one-shot alarm is gone with it")
        #expect(effects.event(.stopped)?.details == ["source": .string("silence")])
        #expect(effects.removedIDs == [id])
    }

    @Test("An auto-silence carried out while a command is applied keeps its source")
    mutating func autoSilenceDuringCommand() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
        _ = engine.advance(to: start + 60)
        let effects = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 600), now: start + 700).caused(by: .command)
        #expect(effects.event(.stopped)?.details == ["source": .string("silence")])
        #expect(effects.event(.scheduled)?.details["source"] == .string("command"))
    }

    @Test("Auto-silence can snooze instead, when configured")
    mutating func autoSilenceSnoozes() throws {
        engine.configuration.silenceAction = .countdown
        engine.configuration.alertTimeout = 120
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, postAlert: 300), now: start)
        _ = engine.advance(to: start + 60)
        let effects = engine.advance(to: start + 180)
        #expect(effects.eventNames == [.silenced, .countdown])
        #expect(effects.event(.countdown)?.details["source"] == .string("silence"))
        #expect(engine.document(for: id)?.nextAlertDate == start + 480)
    }

    @Test("Auto-silence snoozes an unanswered alarm once, then stops it: a daily one rings at its time the next day")
    func autoSilenceSnoozesOnce() throws {
        var engine = AlarmEngine(configuration: .init(alertTimeout: 600, silenceAction: .countdown, timeZone: zone("Europe/Berlin")))
        let daily = configuration(schedule: weekly(7, 0, WeekdayList.week), postAlert: 540, secondary: .countdown)
        _ = try engine.schedule(id: id, configuration: daily, now: date("2026-11-22T05:00:00Z"))
        var alerts: [Date] = []
        func run(until end: String) {
            while let due = engine.nextDeadline, due <= date(end) {
                if engine.advance(to: due).eventNames.contains(.alerting) { alerts.append(due) }
            }
        }
        run(until: "2026-11-23T06:05:00Z")
        // 07:00 Berlin, again after 10 minutes of ringing and a 9-minute snooze; then 07:00 the next day.
        #expect(alerts == [date("2026-11-22T06:00:00Z"), date("2026-11-22T06:19:00Z"), date("2026-11-23T06:00:00Z")])
        // Someone's snooze of an alert after auto-silence's lets auto-silence snooze again.
        run(until: "2026-11-23T06:19:00Z")
        #expect(engine.records[id]?.silenceSnoozed == true)
        _ = try engine.countdown(id: id, now: date("2026-11-23T06:20:00Z"))
        #expect(engine.records[id]?.silenceSnoozed == false)
    }

    @Test("An alert restored long after its timeout is not snoozed from the restart: its snooze ended while the node was down")
    func staleAlertNotSnoozedAtRestart() {
        let restored = AlarmRecord(id: id, configuration: configuration(schedule: .fixed(start), postAlert: 540, secondary: .countdown),
                                   phase: .alerting(since: start, alertDate: start))
        var engine = AlarmEngine(configuration: .init(alertTimeout: 600, silenceAction: .countdown), records: [restored])
        let restart = start + 10 * 3600
        #expect(engine.resumeAlerts(now: restart).isEmpty)
        let effects = engine.advance(to: restart)
        #expect(effects.eventNames == [.silenced, .countdown, .missed])
        #expect(effects.event(.missed)?.details["alertDate"] == .string(AlarmJSON.string(from: start + 600 + 540)))
        #expect(engine.document(for: id) == nil)
    }

    @Test("A daily alarm ringing when the node went down, back the next day 5 minutes after its time, rings that day late")
    func staleAlertThenNextOccurrenceLate() {
        let monday = date("2026-11-23T06:00:00Z")
        let restored = AlarmRecord(id: id, configuration: configuration(schedule: weekly(7, 0, WeekdayList.week)),
                                   phase: .alerting(since: monday, alertDate: monday), lastOccurrenceDay: LocalDay(year: 2026, month: 11, day: 23))
        var engine = AlarmEngine(configuration: .init(alertTimeout: 600, timeZone: zone("Europe/Berlin")), records: [restored])
        // Back on Tuesday at 07:05 Berlin: Monday's alert is silenced, Tuesday's 07:00 is 5 minutes late.
        let effects = engine.advance(to: monday + 86_400 + 300)
        #expect(effects.eventNames == [.silenced, .stopped, .alerting])
        #expect(effects.event(.alerting)?.details["late"] == .number(300))
    }

    @Test("The lifecycle events someone caused name the source; alerting, silenced and the rest do not")
    mutating func sources() throws {
        let scheduled = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
            .caused(by: .homeAssistant)
        #expect(scheduled.event(.scheduled)?.details["source"] == .string("home-assistant"))
        #expect(scheduled.event(.countdown)?.details["source"] == .string("home-assistant"))
        let alerting = engine.advance(to: start + 60).caused(by: .command)
        #expect(alerting.event(.alerting)?.details["source"] == nil)
        let stopped = try engine.stop(id: id, now: start + 61).caused(by: .button)
        #expect(stopped.event(.stopped)?.details == ["source": .string("button")])
        #expect(AlarmEvent.Source.allCases.map(\.rawValue) == ["button", "command", "home-assistant", "silence"])
    }

    @Test("Several alarms alert at once, oldest first")
    mutating func severalAlerting() throws {
        let other = UUID()
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, sound: .named("gentle")), now: start)
        _ = try engine.schedule(id: other, configuration: configuration(preAlert: 90), now: start)
        _ = engine.advance(to: start + 100)
        #expect(engine.alerting.map(\.id) == [id, other])
        #expect(engine.alerting.first?.sound == .named("gentle"))
    }

    @Test("A snooze paused and resumed is still a snooze: the buttons keep off it, and stop ends it")
    mutating func pausedSnoozeResumesAsASnooze() throws {
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, postAlert: 300, secondary: .countdown), now: start)
        _ = engine.advance(to: start + 60)
        _ = try engine.countdown(id: id, now: start + 61)
        _ = try engine.pause(id: id, now: start + 100)
        _ = try engine.resume(id: id, now: start + 120)
        guard case .countdown(let countdown)? = engine.records[id]?.phase else { Issue.record("not counting down"); return }
        #expect(countdown.isSnooze && countdown.fireDate == start + 120 + 261)
        #expect(try engine.endSnooze(id: id, now: start + 130).eventNames == [.stopped])
    }

    // MARK: missed alarms

    @Test("An alert late within the grace sounds now and says how late")
    mutating func lateWithinGrace() throws {
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start + 60)), now: start)
        let effects = engine.advance(to: start + 60 + 840)
        #expect(effects.event(.alerting)?.details["late"] == .number(840))
        #expect(engine.records[id]?.state == .alerting)
    }

    @Test("An alert later than the grace is missed; a one-shot alarm is removed")
    mutating func missedOneShot() throws {
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start + 60)), now: start)
        let effects = engine.advance(to: start + 60 + 901)
        #expect(effects.eventNames == [.missed])
        #expect(effects.event(.missed)?.details["title"] == .string("Wake up"), "named: the alarm is gone with it")
        #expect(effects.removedIDs == [id])
    }

    @Test("With a grace of 0, an alert reached a moment late sounds, also while the clock is not trusted; one 6 s late is missed")
    mutating func zeroGrace() throws {
        engine = AlarmEngine(configuration: .init(missedAlarmGrace: 0, timeZone: zone("Europe/Berlin")))
        let other = UUID()
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: start)
        _ = try engine.schedule(id: other, configuration: configuration(schedule: .fixed(start + 120)), now: start)
        _ = engine.setClockTrusted(false, now: start)
        #expect(engine.advance(to: start + 60.004).eventNames == [.alerting])
        _ = engine.setClockTrusted(true, now: start + 100)
        #expect(engine.advance(to: start + 126).eventNames == [.missed])
    }

    @Test("A missed repeating alarm moves on to its next occurrence")
    mutating func missedRepeating() throws {
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday, .tuesday])), now: start)
        let effects = engine.advance(to: date("2026-11-23T08:00:00Z"))
        #expect(effects.eventNames == [.missed])
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-24T06:00:00Z"))
    }

    /// Moves the alarm `id` into `state` using only the engine's operations.
    private mutating func bring(to state: Alarm.State, configuration: AlarmManager.AlarmConfiguration<JSONValue>) throws {
        _ = try engine.schedule(id: id, configuration: configuration, now: start)
        let alertDate = try #require(engine.records[id]?.nextAlertDate)
        switch state {
        case .scheduled: break
        case .countdown: _ = engine.advance(to: alertDate - 30)
        case .paused:
            _ = engine.advance(to: alertDate - 30)
            _ = try engine.pause(id: id, now: alertDate - 20)
        case .alerting: _ = engine.advance(to: alertDate)
        }
        #expect(engine.records[id]?.state == state)
    }
}

@Suite("Engine deadline index")
struct DeadlineIndexTests {
    /// The next deadline computed the slow way, from every record.
    func bruteForceDeadline(_ engine: AlarmEngine) -> Date? {
        engine.records.values.compactMap { record -> Date? in
            switch record.phase {
            case .scheduled(let alertDate): alertDate - (record.configuration.countdownDuration?.preAlert ?? 0)
            case .countdown(let countdown): countdown.fireDate
            case .paused: nil
            case .alerting(let since, _): since + engine.configuration.alertTimeout
            }
        }.min()
    }

    @Test("After any sequence of operations the indexed next deadline is the true one")
    func randomOperations() throws {
        var generator = SplitMix64(seed: 42)
        var engine = AlarmEngine(configuration: .init(maximumAlarms: 1000, alertTimeout: 120, timeZone: zone("Europe/Berlin")))
        var now = date("2026-11-22T10:00:00Z")
        var ids: [UUID] = []
        for _ in 0..<3000 {
            let id = ids.isEmpty ? UUID() : ids[Int(generator.next() % UInt64(ids.count))]
            switch generator.next() % 8 {
            case 0, 1:
                let newID = UUID()
                ids.append(newID)
                let seconds = Double(1 + generator.next() % 600)
                let config = generator.next() % 2 == 0
                    ? configuration(preAlert: seconds, postAlert: 30)
                    : configuration(schedule: .fixed(now + seconds), preAlert: generator.next() % 2 == 0 ? 20 : nil)
                _ = try engine.schedule(id: newID, configuration: config, now: now)
            case 2: _ = try? engine.pause(id: id, now: now)
            case 3: _ = try? engine.resume(id: id, now: now)
            case 4: _ = try? engine.cancel(id: id, now: now)
            case 5: _ = try? engine.countdown(id: id, now: now)
            case 6: _ = try? engine.stop(id: id, now: now)
            default:
                now += Double(generator.next() % 90)
                _ = engine.advance(to: now)
                // Nothing due is left behind.
                #expect(engine.nextDeadline.map { $0 > now } ?? true)
            }
            #expect(engine.nextDeadline == bruteForceDeadline(engine))
        }
    }
}
