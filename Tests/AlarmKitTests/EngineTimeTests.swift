import Foundation
import Testing
@testable import AlarmKit

@Suite("Engine and time: clock steps, zones, daylight saving")
struct EngineTimeTests {
    let id = UUID()

    @Test("A wall-clock step of ±1 h never lengthens or shortens a running timer", arguments: [3600.0, -3600.0])
    func timerIgnoresSteps(offset: TimeInterval) throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))
        let start = date("2026-11-22T10:00:00Z")
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600), now: start)
        // 100 s pass, then the clock is stepped: the wall clock now reads start + 100 + offset.
        let stepped = start + 100 + offset
        #expect(engine.wallClockStepped(by: offset, now: stepped).eventNames.isEmpty)
        #expect(engine.document(for: id)?.nextAlertDate == stepped + 500)
        #expect(engine.advance(to: stepped + 499).isEmpty)
        #expect(engine.advance(to: stepped + 500).eventNames == [.alerting])
    }

    @Test("A step from 1970 to now keeps a timer's remaining time")
    func stepFrom1970() throws {
        var engine = AlarmEngine()
        let boot = Date(timeIntervalSince1970: 30)
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 300), now: boot)
        let now = date("2026-11-22T10:00:00Z")
        let offset = now.timeIntervalSince(boot + 60)
        #expect(engine.wallClockStepped(by: offset, now: now).eventNames.isEmpty)
        #expect(engine.document(for: id)?.nextAlertDate == now + 240)
    }

    @Test("After a backward step an occurrence that alerted never alerts again")
    func backwardStepNoDoubleAlert() throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday, .tuesday])),
                                now: date("2026-11-22T10:00:00Z"))
        let monday = date("2026-11-23T06:00:00Z")
        _ = engine.advance(to: monday)
        _ = try engine.stop(id: id, now: monday + 60)
        // The clock is stepped back one hour, to before Monday's 07:00.
        let stepped = monday + 60 - 3600
        let effects = engine.wallClockStepped(by: -3600, now: stepped)
        #expect(effects.eventNames.isEmpty)
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-24T06:00:00Z"))
        #expect(engine.advance(to: monday + 30).isEmpty)
    }

    @Test("A forward step past an alert date is a missed alarm, late within the grace sounds")
    func forwardStepMisses() throws {
        var engine = AlarmEngine()
        let start = date("2026-11-22T10:00:00Z")
        let late = UUID(), missed = UUID()
        _ = try engine.schedule(id: late, configuration: configuration(schedule: .fixed(start + 600)), now: start)
        _ = try engine.schedule(id: missed, configuration: configuration(schedule: .fixed(start + 60)), now: start)
        let effects = engine.wallClockStepped(by: 3600 - 600 + 120, now: start + 1120)
        // `late` was due at +600 and it is +1120: 520 s late. `missed` was due at +60: 1060 s late.
        #expect(effects.event(.alerting)?.alarmID == late)
        #expect(effects.event(.alerting)?.details["late"] == .number(520))
        #expect(effects.event(.missed)?.alarmID == missed)
    }

    @Test("Down, or stepped forward, over days: the occurrence missed is reported, and the one late within the grace still rings",
          arguments: [
            // Daily 07:00 in Berlin, down from Saturday 20:00 to Monday 07:05: Sunday missed, Monday 5 minutes late.
            ("Europe/Berlin", WeekdayList.week, "2026-11-21T19:00:00Z", "2026-11-23T06:05:00Z", false),
            ("Europe/Berlin", WeekdayList.week, "2026-11-21T19:00:00Z", "2026-11-23T06:05:00Z", true),
            // Weekdays 07:00 in New York, down from Thursday 21:00 to Monday 07:05: Friday missed.
            ("America/New_York", Array(WeekdayList.week.prefix(5)), "2026-11-20T02:00:00Z", "2026-11-23T12:05:00Z", false),
          ])
    func downOverDays(zone zoneID: String, days: [Locale.Weekday], from: String, back: String, stepped: Bool) throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone(zoneID)))
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, days)), now: date(from))
        let effects = stepped ? engine.wallClockStepped(by: date(back).timeIntervalSince(date(from)), now: date(back)) : engine.advance(to: date(back))
        #expect(effects.eventNames == [.missed, .alerting])
        #expect(effects.event(.alerting)?.details["late"] == .number(300))
        #expect(engine.records[id]?.state == .alerting)
    }

    @Test("A zone change just after an alert fell due, before the node's timer ran, rings it rather than moving on")
    func zoneChangeAtTheAlertDate() throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, WeekdayList.week)), now: date("2026-11-22T12:00:00Z"))
        #expect(engine.changeTimeZone(to: zone("Europe/Paris"), now: date("2026-11-23T06:00:02Z")).eventNames == [.alerting])
    }

    @Test("A time zone change re-reads relative schedules; fixed ones stay put")
    func timeZoneChange() throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))
        let now = date("2026-11-22T10:00:00Z")
        let fixed = UUID()
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(7, 0, [.monday])), now: now)
        _ = try engine.schedule(id: fixed, configuration: configuration(schedule: .fixed(date("2026-11-23T06:00:00Z"))), now: now)
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-23T06:00:00Z"))

        let effects = engine.changeTimeZone(to: zone("America/Los_Angeles"), now: now)
        #expect(effects.count == 1)
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-23T15:00:00Z"))
        #expect(engine.document(for: fixed)?.nextAlertDate == date("2026-11-23T06:00:00Z"))

        _ = engine.changeTimeZone(to: zone("Europe/Berlin"), now: now)
        #expect(engine.document(for: id)?.nextAlertDate == date("2026-11-23T06:00:00Z"))
    }

    @Test("After a zone change an alarm that already rang heads for the next occurrence in the new zone, skipping none",
          arguments: [
            // Rang Sunday 08:26 in Tokyo (Saturday 23:26 UTC); in Los Angeles it is Saturday: Sunday is tomorrow.
            ("Asia/Tokyo", "America/Los_Angeles", 8, 26, [Locale.Weekday.sunday], "2026-11-28T23:26:00Z", "2026-11-29T16:26:00Z"),
            // Rang 07:00 in Los Angeles (15:00 UTC); an hour later in Tokyo it is 01:00 the next day: 07:00 there is ahead.
            ("America/Los_Angeles", "Asia/Tokyo", 7, 0, [.sunday, .monday, .tuesday, .wednesday, .thursday, .friday, .saturday], "2026-11-23T15:00:00Z", "2026-11-23T22:00:00Z"),
            // Rang 07:00 in UTC; in Los Angeles it is 00:00 the same day: today's 07:00 is ahead.
            ("UTC", "America/Los_Angeles", 7, 0, [.sunday, .monday, .tuesday, .wednesday, .thursday, .friday, .saturday], "2026-11-23T07:00:00Z", "2026-11-23T15:00:00Z"),
          ])
    func zoneChangeAfterAnAlert(from: String, to: String, hour: Int, minute: Int, days: [Locale.Weekday], rang: String, next: String) throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone(from)))
        let alerted = date(rang)
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(hour, minute, days)), now: alerted - 3600)
        #expect(engine.advance(to: alerted).eventNames == [.alerting])
        _ = try engine.stop(id: id, now: alerted + 60)
        _ = engine.changeTimeZone(to: zone(to), now: alerted + 3600)
        #expect(engine.document(for: id)?.nextAlertDate == date(next))
    }

    @Test("A weekly alarm through spring-forward and fall-back alerts once per day, shifted in the gap",
          arguments: [
            ("Europe/Berlin", 2, 30, "2027-03-27T00:00:00Z",
             ["2027-03-27T01:30:00Z", "2027-03-28T01:30:00Z", "2027-03-29T00:30:00Z"]),
            ("Europe/Berlin", 2, 30, "2027-10-30T00:00:00Z",
             ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"]),
            ("America/New_York", 1, 30, "2026-10-31T00:00:00Z",
             ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
            ("Australia/Lord_Howe", 2, 15, "2026-10-03T00:00:00Z",
             ["2026-10-03T15:45:00Z", "2026-10-04T15:15:00Z"]),
            ("Australia/Lord_Howe", 1, 45, "2027-04-02T12:00:00Z",
             ["2027-04-02T14:45:00Z", "2027-04-03T14:45:00Z", "2027-04-04T15:15:00Z"]),
          ])
    func dstThroughEngine(zoneID: String, hour: Int, minute: Int, from: String, expected: [String]) throws {
        var engine = AlarmEngine(configuration: .init(timeZone: zone(zoneID)))
        let everyDay: [Locale.Weekday] = [.sunday, .monday, .tuesday, .wednesday, .thursday, .friday, .saturday]
        var now = date(from)
        _ = try engine.schedule(id: id, configuration: configuration(schedule: weekly(hour, minute, everyDay)), now: now)
        var alerts: [Date] = []
        while alerts.count < expected.count {
            let due = try #require(engine.nextDeadline)
            now = due
            if !engine.advance(to: now).eventNames.filter({ $0 == .alerting }).isEmpty {
                alerts.append(now)
                // Stopped one minute later: inside a repeated hour, the second 02:30 must not alert.
                now += 60
                _ = try engine.stop(id: id, now: now)
            }
        }
        #expect(alerts == expected.map(date))
    }

    /// A board without a battery-backed clock boots after a power cut with the time fake-hwclock
    /// saved (behind), and NTP then steps it right: the dates restored from disk were right all along.
    @Test("A timer and an alert restored before the clock is trusted keep their dates across its step")
    func restoredDatesKeptAcrossFirstStep() throws {
        let timer = UUID(), later = UUID(), alerting = UUID(), startedAfterBoot = UUID()
        func countdown(_ id: UUID, firing fireDate: Date) -> AlarmRecord {
            AlarmRecord(id: id, configuration: configuration(preAlert: 600), phase: .countdown(.init(
                totalCountdownDuration: 600, previouslyElapsedDuration: 0, startDate: fireDate - 600, fireDate: fireDate, isPreAlert: false)))
        }
        let restored = [
            countdown(timer, firing: date("2026-11-22T07:10:00Z")),
            countdown(later, firing: date("2026-11-22T07:30:00Z")),
            AlarmRecord(id: alerting, configuration: configuration(schedule: weekly(8, 0, [.sunday])),
                        phase: .alerting(since: date("2026-11-22T07:00:00Z"), alertDate: date("2026-11-22T07:00:00Z"))),
        ]
        var engine = AlarmEngine(configuration: .init(alertTimeout: 600, timeZone: zone("Europe/Berlin")), records: restored,
                                 clockTrusted: false)
        let boot = date("2026-11-22T06:30:00Z")
        #expect(engine.resumeAlerts(now: boot).eventNames == [.alerting])
        #expect(engine.advance(to: boot).isEmpty)
        _ = try engine.schedule(id: startedAfterBoot, configuration: configuration(preAlert: 300), now: boot)
        let synchronized = date("2026-11-22T07:06:40Z")
        _ = engine.wallClockStepped(by: synchronized.timeIntervalSince(boot), now: synchronized)
        #expect(engine.document(for: timer)?.nextAlertDate == date("2026-11-22T07:10:00Z"))
        #expect(engine.document(for: later)?.nextAlertDate == date("2026-11-22T07:30:00Z"))
        #expect(engine.document(for: startedAfterBoot)?.nextAlertDate == synchronized + 300)
        _ = engine.setClockTrusted(true, now: synchronized)
        #expect(Set(engine.advance(to: date("2026-11-22T07:10:00Z")).eventNames) == [.silenced, .stopped, .alerting])
        #expect(engine.document(for: alerting)?.state == .scheduled)
        // Once the clock is trusted, a later step moves the countdowns of before the restart too.
        _ = engine.wallClockStepped(by: 60, now: date("2026-11-22T07:11:00Z"))
        #expect(engine.document(for: later)?.nextAlertDate == date("2026-11-22T07:31:00Z"))
    }

    /// A board that boots with its clock ahead holds what looks long overdue; a step that puts the
    /// clock right (by hand, or a tool that does not mark it synchronized) makes those alerts due
    /// later again: they ring at their time, not when the clock is trusted.
    @Test("Alerts held while the clock is not trusted ring at their time once a step back makes them due ahead")
    func heldAlertsSteppedBack() throws {
        let alarmAt = date("2026-11-22T07:00:00Z")
        let fixed = UUID(), timer = UUID()
        let restored = [
            AlarmRecord(id: fixed, configuration: configuration(schedule: .fixed(alarmAt)), phase: .scheduled(alertDate: alarmAt)),
            AlarmRecord(id: timer, configuration: configuration(preAlert: 600), phase: .countdown(.init(
                totalCountdownDuration: 600, previouslyElapsedDuration: 0, startDate: alarmAt - 600, fireDate: alarmAt, isPreAlert: false))),
        ]
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")), records: restored, clockTrusted: false)
        #expect(engine.advance(to: alarmAt + 3600).isEmpty)
        #expect(engine.heldAlarms == [fixed, timer])
        _ = engine.wallClockStepped(by: -3900, now: alarmAt - 300)
        #expect(engine.heldAlarms.isEmpty)
        #expect(engine.nextDeadline == alarmAt)
        #expect(engine.advance(to: alarmAt).eventNames == [.alerting, .alerting])
    }

    /// An alarm held while the clock is untrusted, then scheduled again for a time ahead, must
    /// ring at that time, not wait for the clock to be trusted.
    @Test("A held alarm scheduled again alerts at its new time")
    func heldAlarmRescheduled() throws {
        let start = date("2026-11-22T10:00:00Z")
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")), clockTrusted: false)
        let id = UUID()
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(start + 60)), now: start)
        _ = engine.advance(to: start + 3 * 3600)
        #expect(engine.heldAlarms == [id])
        let later = start + 3 * 3600 + 60
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(later), title: "Again"), now: start + 3 * 3600)
        #expect(engine.heldAlarms.isEmpty)
        #expect(engine.nextDeadline == later)
        _ = engine.advance(to: later)
        #expect(engine.document(for: id)?.state == .alerting)
    }
}
