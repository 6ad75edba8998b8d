import AlarmHardware
import AlarmKit
import AlarmNode
import Foundation
import Synchronization
import Testing

/// What a stop or snooze press does in every state of the node (docs/hardware.md): `ButtonActions.plan`
/// decides from the engine alone; the engines here are built with its public operations at
/// explicit instants, and each plan is then carried out on the engine to check its effect.
@Suite("Button actions")
struct ButtonActionsTests {
    // MARK: Building engines

    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }
    static let allPresses: [(Button, ButtonPress.Kind)] = [(.stop, .short), (.stop, .long), (.snooze, .short), (.snooze, .long)]

    /// Ids that read well in failures: …0001, …0002, …
    static func id(_ number: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", number))!
    }

    static func configuration(
        schedule: Alarm.Schedule? = nil, preAlert: TimeInterval? = nil, postAlert: TimeInterval? = nil,
        secondary: AlarmPresentation.Alert.SecondaryButtonBehavior? = nil, secondaryIntent: AlarmIntent? = nil
    ) -> AlarmManager.AlarmConfiguration<JSONValue> {
        let alert = AlarmPresentation.Alert(
            title: "Wake up",
            secondaryButton: secondary.map { _ in AlarmButton(text: "Snooze", textColor: .white, systemImageName: "zzz") },
            secondaryButtonBehavior: secondary)
        let countdown = preAlert == nil && postAlert == nil ? nil : Alarm.CountdownDuration(preAlert: preAlert, postAlert: postAlert)
        return .init(countdownDuration: countdown, schedule: schedule,
                     attributes: AlarmAttributes(presentation: AlarmPresentation(alert: alert), tintColor: .orange),
                     secondaryIntent: secondaryIntent)
    }

    /// A timer of `duration` seconds started at `at`, snoozing with its secondary button.
    static func timer(
        _ engine: inout AlarmEngine, _ id: UUID, _ duration: TimeInterval, at seconds: TimeInterval = 0,
        secondary: AlarmPresentation.Alert.SecondaryButtonBehavior? = .countdown, secondaryIntent: AlarmIntent? = nil
    ) throws {
        _ = try engine.schedule(
            id: id, configuration: configuration(preAlert: duration, postAlert: 300, secondary: secondary, secondaryIntent: secondaryIntent),
            now: at(seconds))
    }

    /// A one-shot alarm at a fixed instant that snoozes for 5 minutes, optionally with a pre-alert countdown.
    static func alarm(_ engine: inout AlarmEngine, _ id: UUID, alertAt seconds: TimeInterval, preAlert: TimeInterval? = nil) throws {
        _ = try engine.schedule(
            id: id, configuration: configuration(schedule: .fixed(at(seconds)), preAlert: preAlert, postAlert: 300, secondary: .countdown),
            now: at(0))
    }

    /// A timer (id 1) of `duration` seconds from 0 s, and a one-shot alarm (id 2) ringing since 60 s.
    static func timerBesideARingingAlarm(timer duration: TimeInterval) throws -> AlarmEngine {
        var engine = engine()
        try timer(&engine, id(1), duration)
        try alarm(&engine, id(2), alertAt: 60)
        _ = engine.advance(to: at(60))
        return engine
    }

    static func engine() -> AlarmEngine {
        AlarmEngine(configuration: EngineConfiguration(timeZone: TimeZone(identifier: "UTC")!))
    }

    /// Carries the plan out on the engine the way the daemon does, at `now`; every action must be accepted.
    static func carryOut(_ actions: [ButtonAction], on engine: inout AlarmEngine, at seconds: TimeInterval) throws -> [AlarmEffect] {
        var effects: [AlarmEffect] = []
        for action in actions {
            effects += try action.apply(to: &engine, now: at(seconds))
        }
        return effects
    }

    static func state(_ engine: AlarmEngine, _ id: UUID) -> Alarm.State? { engine.records[id]?.state }

    // MARK: Nothing alerting, nothing counting down

    @Test("With no alarms at all, no press does anything")
    func noAlarms() {
        let engine = Self.engine()
        for (button, kind) in Self.allPresses {
            #expect(ButtonActions.plan(button, kind, engine: engine, now: Self.at(0)).isEmpty, "\(button) \(kind)")
        }
    }

    @Test("With only scheduled alarms (no countdown), no press does anything")
    func onlyScheduled() throws {
        var engine = Self.engine()
        try Self.alarm(&engine, Self.id(1), alertAt: 3600)
        try Self.alarm(&engine, Self.id(2), alertAt: 7200, preAlert: 600)
        #expect(Self.state(engine, Self.id(2)) == .scheduled)
        for (button, kind) in Self.allPresses {
            #expect(ButtonActions.plan(button, kind, engine: engine, now: Self.at(100)).isEmpty, "\(button) \(kind)")
        }
    }

    // MARK: One alarm alerting

    @Test("One alarm alerting: stop stops it, short or long", arguments: [ButtonPress.Kind.short, .long])
    func oneAlertingStop(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        _ = engine.advance(to: Self.at(60))
        #expect(Self.state(engine, Self.id(1)) == .alerting)

        let plan = ButtonActions.plan(.stop, kind, engine: engine, now: Self.at(61))
        #expect(plan == [.perform(.stop, id: Self.id(1))])
        let effects = try Self.carryOut(plan, on: &engine, at: 61)
        #expect(effects.contains(.alertEnded(Self.id(1))))
        #expect(engine.records.isEmpty, "a one-shot timer is removed when stopped")
    }

    @Test("One alarm alerting: snooze applies its secondary behaviour, short or long", arguments: [ButtonPress.Kind.short, .long])
    func oneAlertingSnooze(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        _ = engine.advance(to: Self.at(60))

        let plan = ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(61))
        #expect(plan == [.secondary(id: Self.id(1))])
        _ = try Self.carryOut(plan, on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(1)) == .countdown)
        #expect(engine.records[Self.id(1)]?.nextAlertDate == Self.at(61 + 300), "snoozed for postAlert")
    }

    @Test("A scheduled alarm alerting: stop stops it; a repeating one waits for its next occurrence")
    func scheduledAlarmAlerting() throws {
        var engine = Self.engine()
        // 1_800_000_000 is 2027-01-15 08:00:00 UTC, a Friday.
        let repeating = Alarm.Schedule.relative(.init(time: .init(hour: 9, minute: 0), repeats: .weekly([.friday, .monday])))
        _ = try engine.schedule(id: Self.id(1), configuration: Self.configuration(schedule: repeating, postAlert: 300, secondary: .countdown), now: Self.at(0))
        try Self.alarm(&engine, Self.id(2), alertAt: 3660)
        _ = engine.advance(to: Self.at(3600))
        _ = engine.advance(to: Self.at(3660))
        #expect(engine.alerting.map(\.id) == [Self.id(1), Self.id(2)])

        let plan = ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(3665))
        #expect(plan == [.perform(.stop, id: Self.id(1)), .perform(.stop, id: Self.id(2))])
        _ = try Self.carryOut(plan, on: &engine, at: 3665)
        #expect(Self.state(engine, Self.id(1)) == .scheduled)
        #expect(Self.state(engine, Self.id(2)) == nil)
    }

    // MARK: Several alarms alerting

    @Test("Several alerting: stop stops every one, oldest alert first", arguments: [ButtonPress.Kind.short, .long])
    func severalAlertingStop(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 120)
        try Self.timer(&engine, Self.id(2), 60, secondary: .custom)
        try Self.timer(&engine, Self.id(3), 90, secondary: nil)
        _ = engine.advance(to: Self.at(60))
        _ = engine.advance(to: Self.at(90))
        _ = engine.advance(to: Self.at(120))

        let plan = ButtonActions.plan(.stop, kind, engine: engine, now: Self.at(121))
        #expect(plan == [Self.id(2), Self.id(3), Self.id(1)].map { .perform(.stop, id: $0) })
        _ = try Self.carryOut(plan, on: &engine, at: 121)
        #expect(engine.records.isEmpty)
    }

    @Test("A press on a node stops every alerting alarm at once, without waiting for the disk",
          .timeLimit(.minutes(1)))
    func pressDoesNotWaitForTheDisk() async throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        try Self.timer(&engine, Self.id(2), 60)
        _ = engine.advance(to: Self.at(60))
        let disk = StalledDisk()
        let node = LocalAlarmNode(
            configuration: engine.configuration,
            state: NodeState(authorization: .authorized, alarms: Array(engine.records.values)),
            clock: ManualAlarmClock(now: Self.at(61)), delegate: disk)
        #expect(await node.withEngine { $0.alerting.count } == 2)

        // The write the press starts cannot finish until the disk is released. That first write
        // must already hold both alarms stopped (one change), and the press must return while it
        // is stalled.
        let pressing = Task { await ButtonActions.press(.stop, .short, on: node) }
        let alertingInFirstWrite = await disk.firstWrite.wait(atMost: .seconds(30)) { try await Task.sleep(for: $0) }
        #expect(alertingInFirstWrite == 0, "both alarms stop in the change the first write saves")
        // Stopping one alarm per write (the old behaviour) would wait for this write: let it go,
        // the test has failed already.
        if alertingInFirstWrite != 0 { disk.release() }
        let refusals = await pressing.value
        #expect(refusals.isEmpty)
        #expect(disk.savedAlarmCounts.isEmpty, "the press returned while its write was stalled")
        #expect(await node.withEngine { $0.alerting.isEmpty })
        #expect(disk.stoppedAlerts == 2, "both alerts end in the one change the press made")

        disk.release()
        #expect(await node.flush() == nil)
        #expect(disk.savedAlarmCounts.last == 0)
    }

    @Test("Several alerting: snooze applies each one's own secondary behaviour", arguments: [ButtonPress.Kind.short, .long])
    func severalAlertingSnooze(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        let intent = AlarmIntent.publish(topic: "home/lights/set", payload: "ON {alarmID}")
        try Self.timer(&engine, Self.id(1), 60, secondary: .countdown)
        try Self.timer(&engine, Self.id(2), 60, secondary: .custom, secondaryIntent: intent)
        try Self.timer(&engine, Self.id(3), 60, secondary: nil)
        _ = engine.advance(to: Self.at(60))
        #expect(engine.alerting.count == 3)

        let plan = ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(61))
        #expect(Set(plan) == Set([1, 2, 3].map { ButtonAction.secondary(id: Self.id($0)) }))
        #expect(plan.count == 3)
        let effects = try Self.carryOut(plan, on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(1)) == .countdown, ".countdown snoozes")
        #expect(Self.state(engine, Self.id(2)) == .alerting, ".custom runs its intent and keeps alerting")
        #expect(effects.contains(.runIntent(intent, alarmID: Self.id(2))))
        #expect(Self.state(engine, Self.id(3)) == .alerting, "no secondary button: nothing happens")
        #expect(Set(engine.alerting.map(\.id)) == [Self.id(2), Self.id(3)], "the buzzer keeps sounding for them")
    }

    @Test("An alert takes precedence over running and paused countdowns")
    func alertingBeatsCountdowns() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        try Self.timer(&engine, Self.id(2), 600)
        try Self.timer(&engine, Self.id(3), 900)
        _ = try engine.pause(id: Self.id(3), now: Self.at(30))
        _ = engine.advance(to: Self.at(60))
        #expect(Self.state(engine, Self.id(1)) == .alerting)

        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(61)) == [.secondary(id: Self.id(1))])
        #expect(ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(61)) == [.perform(.stop, id: Self.id(1))],
                "a long stop press while alerting stops the alert and cancels no timer")
        #expect(ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(61)) == [.perform(.stop, id: Self.id(1))])
    }

    // MARK: Countdowns, nothing alerting

    @Test("A running timer: snooze pauses it, short or long", arguments: [ButtonPress.Kind.short, .long])
    func runningTimerSnooze(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 600)

        let plan = ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(100))
        #expect(plan == [.perform(.pause, id: Self.id(1))])
        _ = try Self.carryOut(plan, on: &engine, at: 100)
        #expect(Self.state(engine, Self.id(1)) == .paused)

        // The next snooze press resumes it.
        let again = ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(200))
        #expect(again == [.perform(.resume, id: Self.id(1))])
        _ = try Self.carryOut(again, on: &engine, at: 200)
        #expect(engine.records[Self.id(1)]?.nextAlertDate == Self.at(200 + 500), "resumed for the 500 s left")
    }

    @Test("Snooze pressed again, at once or later: a snoozed alarm counts down on, to ring again", arguments: [ButtonPress.Kind.short, .long])
    func pressesAfterSnooze(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.alarm(&engine, Self.id(1), alertAt: 60)
        _ = engine.advance(to: Self.at(60))
        _ = try Self.carryOut(ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(61)), on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(1)) == .countdown, "snoozed")
        for seconds in [61.4, 62.9, 65, 200] {
            #expect(ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(seconds)).isEmpty, "at \(seconds) s")
        }
    }

    @Test("Stop ends a snooze, as it would the alert: a one-shot alarm goes, a daily one waits for tomorrow; not just after the alert ended")
    func stopEndsSnoozes() throws {
        var engine = Self.engine()
        try Self.alarm(&engine, Self.id(1), alertAt: 60)
        let daily = Alarm.Schedule.relative(.init(time: .init(hour: 8, minute: 1), repeats: .weekly(WeekdayList.week)))
        _ = try engine.schedule(id: Self.id(2), configuration: Self.configuration(schedule: daily, postAlert: 300, secondary: .countdown), now: Self.at(0))
        try Self.timer(&engine, Self.id(3), 600)
        _ = engine.advance(to: Self.at(60))
        _ = try Self.carryOut(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(61)), on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(1)) == .countdown && Self.state(engine, Self.id(2)) == .countdown, "both snoozed")
        for seconds in [61.5, 70.9] {
            #expect(ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(seconds)).isEmpty, "meant for the alert, at \(seconds) s")
        }
        let plan = ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(120))
        #expect(Set(plan) == [.endSnooze(id: Self.id(1)), .endSnooze(id: Self.id(2))], "the running timer is no snooze")
        #expect(Set(ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(120)))
            == [.endSnooze(id: Self.id(1)), .endSnooze(id: Self.id(2)), .perform(.cancel, id: Self.id(3))], "a long press cancels the timer too")
        let effects = try Self.carryOut(plan, on: &engine, at: 120)
        #expect(effects.compactMap { effect -> AlarmEvent.Name? in if case .event(let event) = effect { event.name } else { nil } } == [.stopped, .stopped])
        #expect(Self.state(engine, Self.id(1)) == nil)
        #expect(Self.state(engine, Self.id(2)) == .scheduled && engine.records[Self.id(2)]?.nextAlertDate == Self.at(60 + 86400))
        #expect(Self.state(engine, Self.id(3)) == .countdown)
        #expect(throws: AlarmNodeError.self) { try ButtonAction.endSnooze(id: Self.id(3)).apply(to: &engine, now: Self.at(121)) }
    }

    @Test("A snoozed timer (a nap's, say) is never paused by a press; a timer counting down beside it is")
    func pressesAfterTimerSnooze() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        _ = engine.advance(to: Self.at(60))
        _ = try Self.carryOut(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(61)), on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(1)) == .countdown, "snoozed")
        for seconds in [62.9, 65.0, 100.0] {
            #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(seconds)).isEmpty, "at \(seconds) s")
        }
        try Self.timer(&engine, Self.id(2), 600, at: 100)
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(110)) == [.perform(.pause, id: Self.id(2))])
    }

    @Test("Snooze pressed twice while another countdown ends sooner: the second press pauses nothing")
    func doublePressAfterSnoozeBesideASoonerTimer() throws {
        var engine = try Self.timerBesideARingingAlarm(timer: 100)
        _ = try Self.carryOut(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(61)), on: &engine, at: 61)
        #expect(Self.state(engine, Self.id(2)) == .countdown, "snoozed for 5 minutes; the timer ends sooner")
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(61.6)).isEmpty, "the same press again")
        // Within 10 s of the alert's end (the snooze) a press is still meant for it.
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(63)).isEmpty)
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(71)) == [.perform(.pause, id: Self.id(1))])
    }

    @Test("Snooze pressed just after a stop, by hand or from Home Assistant, pauses no other timer")
    func snoozeJustAfterAStop() throws {
        var engine = try Self.timerBesideARingingAlarm(timer: 600)
        _ = try Self.carryOut(ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(70)), on: &engine, at: 70)
        #expect(Self.state(engine, Self.id(2)) == nil, "stopped")
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(70.5)).isEmpty, "meant for the alarm just stopped")
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(79.9)).isEmpty)
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(80)) == [.perform(.pause, id: Self.id(1))])
        // The wall clock stepped back an hour just after the stop: the press is not blocked for that hour.
        var stepped = engine
        _ = stepped.wallClockStepped(by: -3600, now: Self.at(75 - 3600))
        #expect(ButtonActions.plan(.snooze, .short, engine: stepped, now: Self.at(81 - 3600)) == [.perform(.pause, id: Self.id(1))])
    }

    @Test("A running timer: a short stop press does nothing, a long one cancels it")
    func runningTimerStop() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 600)

        #expect(ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(10)).isEmpty)
        let plan = ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(10))
        #expect(plan == [.perform(.cancel, id: Self.id(1))])
        _ = try Self.carryOut(plan, on: &engine, at: 10)
        #expect(engine.records.isEmpty)
    }

    @Test("Several running countdowns: snooze pauses the one that ends soonest, not the first scheduled")
    func soonestRunningCountdown() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 900)
        try Self.timer(&engine, Self.id(2), 600, at: 100)   // ends at 700
        try Self.timer(&engine, Self.id(3), 800, at: 50)    // ends at 850
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(200)) == [.perform(.pause, id: Self.id(2))])
    }

    @Test("Running and paused countdowns: snooze pauses the running one rather than resuming")
    func runningBeatsPaused() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        _ = try engine.pause(id: Self.id(1), now: Self.at(50))   // 10 s left
        try Self.timer(&engine, Self.id(2), 900, at: 50)
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(100)) == [.perform(.pause, id: Self.id(2))])
    }

    @Test("Only paused countdowns: snooze resumes the one with the least time left", arguments: [ButtonPress.Kind.short, .long])
    func onlyPaused(kind: ButtonPress.Kind) throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 300)
        try Self.timer(&engine, Self.id(2), 900)
        try Self.timer(&engine, Self.id(3), 600)
        _ = try engine.pause(id: Self.id(1), now: Self.at(100))   // 200 s left
        _ = try engine.pause(id: Self.id(3), now: Self.at(100))   // 500 s left
        _ = try engine.pause(id: Self.id(2), now: Self.at(800))   // 100 s left
        #expect(engine.hasRunningCountdown == false)

        let plan = ButtonActions.plan(.snooze, kind, engine: engine, now: Self.at(1000))
        #expect(plan == [.perform(.resume, id: Self.id(2))])
        _ = try Self.carryOut(plan, on: &engine, at: 1000)
        #expect(engine.records[Self.id(2)]?.nextAlertDate == Self.at(1100))
    }

    @Test("Only paused countdowns: a short stop press does nothing, a long one cancels the paused timers")
    func pausedTimersStop() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 300)
        try Self.timer(&engine, Self.id(2), 600)
        _ = try engine.pause(id: Self.id(1), now: Self.at(10))
        _ = try engine.pause(id: Self.id(2), now: Self.at(10))

        #expect(ButtonActions.plan(.stop, .short, engine: engine, now: Self.at(20)).isEmpty)
        let plan = ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(20))
        #expect(Set(plan) == [.perform(.cancel, id: Self.id(1)), .perform(.cancel, id: Self.id(2))])
        _ = try Self.carryOut(plan, on: &engine, at: 20)
        #expect(engine.records.isEmpty)
    }

    // MARK: Timers versus scheduled alarms

    @Test("A long stop press cancels every timer, running or paused, but no scheduled alarm")
    func longStopCancelsTimersOnly() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 600)
        try Self.timer(&engine, Self.id(2), 900)
        _ = try engine.pause(id: Self.id(2), now: Self.at(100))
        try Self.alarm(&engine, Self.id(3), alertAt: 3600)                  // scheduled
        try Self.alarm(&engine, Self.id(4), alertAt: 1000, preAlert: 950)   // its pre-alert countdown runs
        _ = engine.advance(to: Self.at(100))
        #expect(Self.state(engine, Self.id(4)) == .countdown)

        let plan = ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(110))
        #expect(Set(plan) == [.perform(.cancel, id: Self.id(1)), .perform(.cancel, id: Self.id(2))])
        _ = try Self.carryOut(plan, on: &engine, at: 110)
        #expect(Array(engine.records.keys) == [Self.id(3), Self.id(4)])
        #expect(Self.state(engine, Self.id(4)) == .countdown)
    }

    @Test("A long stop press with only scheduled alarms counting down cancels nothing")
    func longStopWithPreAlertOnly() throws {
        var engine = Self.engine()
        try Self.alarm(&engine, Self.id(1), alertAt: 1000, preAlert: 950)
        _ = engine.advance(to: Self.at(100))
        #expect(Self.state(engine, Self.id(1)) == .countdown)
        #expect(ButtonActions.plan(.stop, .long, engine: engine, now: Self.at(100)).isEmpty)
    }

    @Test("Snooze toggles timers only: never a scheduled alarm's pre-alert, even the one ending soonest, nor a paused alarm")
    func snoozeTogglesTimersOnly() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 3000)
        try Self.alarm(&engine, Self.id(2), alertAt: 1000, preAlert: 950)
        _ = engine.advance(to: Self.at(100))
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(100)) == [.perform(.pause, id: Self.id(1))])
        _ = try engine.cancel(id: Self.id(1), now: Self.at(100))
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(100)).isEmpty, "only the alarm's pre-alert runs")
        _ = try engine.pause(id: Self.id(2), now: Self.at(100))
        #expect(ButtonActions.plan(.snooze, .short, engine: engine, now: Self.at(110)).isEmpty, "a paused alarm is resumed by command only")
    }

    // MARK: A single-button board

    @Test("A single button: a short press snoozes, a long press stops")
    func singleButtonBoard() throws {
        var engine = Self.engine()
        try Self.timer(&engine, Self.id(1), 60)
        _ = engine.advance(to: Self.at(60))

        func plan(_ kind: ButtonPress.Kind) -> [ButtonAction] {
            let press = ButtonLayout.singleButton.map(ButtonPress(button: .stop, kind: kind, at: 0))
            return ButtonActions.plan(press.button == .stop ? .stop : .snooze, press.kind == .long ? .long : .short, engine: engine, now: Self.at(61))
        }
        #expect(plan(.short) == [.secondary(id: Self.id(1))])
        #expect(plan(.long) == [.perform(.stop, id: Self.id(1))])

        // With nothing alerting, the long press cancels the running timer and the short one pauses it.
        var idle = Self.engine()
        try Self.timer(&idle, Self.id(2), 600)
        engine = idle
        #expect(plan(.short) == [.perform(.pause, id: Self.id(2))])
        #expect(plan(.long) == [.perform(.cancel, id: Self.id(2))])
    }
}

/// A node delegate whose writes block until `release()`: shows what waits for the disk.
private final class StalledDisk: AlarmNodeDelegate {
    private struct State {
        var released = false
        var savedAlarmCounts: [Int] = []
        var stoppedAlerts = 0
    }
    private let state = Mutex(State())
    private let opened = DispatchSemaphore(value: 0)

    var savedAlarmCounts: [Int] { state.withLock { $0.savedAlarmCounts } }
    var stoppedAlerts: Int { state.withLock { $0.stoppedAlerts } }

    func release() {
        state.withLock { $0.released = true }
        opened.signal()
    }

    /// How many alarms still alert in the first state written.
    let firstWrite = AwaitedAnswer<Int>()

    func persist(_ saved: NodeState) throws {
        firstWrite.answer(saved.alarms.filter { $0.state == .alerting }.count)
        if !state.withLock({ $0.released }) {
            opened.wait()
            opened.signal()
        }
        state.withLock { $0.savedAlarmCounts.append(saved.alarms.count) }
    }

    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
        let ended = effects.filter { if case .alertEnded = $0 { true } else { false } }.count
        state.withLock { $0.stoppedAlerts += ended }
    }
}
