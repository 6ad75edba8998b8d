import Foundation
import Testing
@testable import AlarmKit

@Suite("Schedule math")
struct ScheduleMathTests {
    private func instant(_ hour: Int, _ minute: Int, _ year: Int, _ month: Int, _ day: Int, _ zoneID: String) -> Date {
        ScheduleMath.instant(of: .init(hour: hour, minute: minute), on: LocalDay(year: year, month: month, day: day), in: zone(zoneID))
    }

    @Test("LocalDay converts civil dates and weekdays both ways")
    func localDays() {
        #expect(LocalDay(year: 1970, month: 1, day: 1).daysSinceEpoch == 0)
        #expect(LocalDay(year: 2026, month: 11, day: 22).description == "2026-11-22")
        #expect(LocalDay(year: 2026, month: 11, day: 22).weekdayIndex == 0) // a Sunday
        #expect(LocalDay(year: 1969, month: 12, day: 31).weekdayIndex == 3) // a Wednesday
        for days in stride(from: -800_000, through: 800_000, by: 997) {
            let day = LocalDay(daysSinceEpoch: days)
            let (year, month, dayOfMonth) = day.components
            #expect(LocalDay(year: year, month: month, day: dayOfMonth) == day)
        }
    }

    /// A state file's day is read with it: one edited or damaged out of range is refused, not a crash.
    @Test("A LocalDay read from JSON refuses numbers out of range", arguments: ["999999999999999999-01-01", "2026-999999999999999999-01", "2026-11-22222"])
    func localDayOutOfRange(text: String) throws {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LocalDay.self, from: Data("\"\(text)\"".utf8)) }
        #expect(try JSONDecoder().decode(LocalDay.self, from: Data("\"2026-11-22\"".utf8)) == LocalDay(year: 2026, month: 11, day: 22))
    }

    @Test("A local time that occurs once is that instant", arguments: [
        ("Europe/Berlin", "2026-11-23T06:00:00Z"), ("America/New_York", "2026-11-23T12:00:00Z"),
        ("Australia/Lord_Howe", "2026-11-22T20:00:00Z"), ("Asia/Tokyo", "2026-11-22T22:00:00Z"),
    ])
    func plainTime(zoneID: String, expected: String) {
        #expect(instant(7, 0, 2026, 11, 23, zoneID) == date(expected))
    }

    @Test("A time in a spring-forward gap alerts shifted by the gap", arguments: [
        // 02:30 in Berlin's 02:00→03:00 gap alerts at 03:30 CEST.
        ("Europe/Berlin", 2, 30, 2027, 3, 28, "2027-03-28T01:30:00Z"),
        // 02:15 in New York's 02:00→03:00 gap alerts at 03:15 EDT.
        ("America/New_York", 2, 15, 2027, 3, 14, "2027-03-14T07:15:00Z"),
        // Lord Howe moves 02:00→02:30: 02:10 alerts at 02:40 (+11:00).
        ("Australia/Lord_Howe", 2, 10, 2026, 10, 4, "2026-10-03T15:40:00Z"),
    ])
    func gap(zoneID: String, hour: Int, minute: Int, year: Int, month: Int, day: Int, expected: String) {
        #expect(instant(hour, minute, year, month, day, zoneID) == date(expected))
    }

    @Test("A time repeated at fall-back alerts at its first occurrence", arguments: [
        ("Europe/Berlin", 2, 30, 2027, 10, 31, "2027-10-31T00:30:00Z"),
        ("America/New_York", 1, 30, 2026, 11, 1, "2026-11-01T05:30:00Z"),
        // Lord Howe moves 02:00→01:30: 01:45 first occurs at +11:00.
        ("Australia/Lord_Howe", 1, 45, 2027, 4, 4, "2027-04-03T14:45:00Z"),
    ])
    func fold(zoneID: String, hour: Int, minute: Int, year: Int, month: Int, day: Int, expected: String) {
        #expect(instant(hour, minute, year, month, day, zoneID) == date(expected))
    }

    @Test("The repeated hour alerts once: the next occurrence after the first is the next day")
    func foldAlertsOnce() throws {
        let berlin = zone("Europe/Berlin")
        let schedule = Alarm.Schedule.Relative(time: .init(hour: 2, minute: 30), repeats: .weekly([.sunday, .monday]))
        let first = try #require(ScheduleMath.nextOccurrence(of: schedule, after: date("2027-10-30T22:00:00Z"), in: berlin))
        #expect(first.date == date("2027-10-31T00:30:00Z"))
        // One minute after the first 02:30, Foundation's nextDate would give the second one.
        let next = try #require(ScheduleMath.nextOccurrence(
            of: schedule, after: first.date + 60, lastDay: first.day, in: berlin))
        #expect(next.date == date("2027-11-01T01:30:00Z"))
        // Even without knowing the last day, the same local day never yields a second instant.
        let unaware = try #require(ScheduleMath.nextOccurrence(of: schedule, after: first.date + 60, in: berlin))
        #expect(unaware.date == date("2027-11-01T01:30:00Z"))
    }

    @Test("A zone without daylight saving never shifts")
    func noDST() {
        let dates = ScheduleMath.upcomingAlertDates(of: weekly(2, 30, [.sunday]), after: date("2027-03-20T00:00:00Z"),
                                                    count: 3, in: zone("Asia/Tokyo"))
        #expect(dates == [date("2027-03-20T17:30:00Z"), date("2027-03-27T17:30:00Z"), date("2027-04-03T17:30:00Z")])
    }

    @Test("Weekly sets wrap across week ends and year ends")
    func weeklyAcrossYearEnd() {
        // 2026-12-31 is a Thursday; Friday and Monday are next, in 2027.
        let dates = ScheduleMath.upcomingAlertDates(
            of: weekly(7, 0, [.monday, .friday]), after: date("2026-12-31T12:00:00Z"), count: 4, in: zone("Europe/Berlin"))
        #expect(dates == [date("2027-01-01T06:00:00Z"), date("2027-01-04T06:00:00Z"),
                          date("2027-01-08T06:00:00Z"), date("2027-01-11T06:00:00Z")])
        // Saturday night, Sunday-only alarm at 00:05: the next day, across the week's end.
        let sunday = ScheduleMath.upcomingAlertDates(
            of: weekly(0, 5, [.sunday]), after: date("2027-01-02T22:00:00Z"), count: 1, in: zone("Europe/London"))
        #expect(sunday == [date("2027-01-03T00:05:00Z")])
    }

    @Test("A one-shot time is the next one strictly after now")
    func onceIsStrictlyAfter() {
        let berlin = zone("Europe/Berlin")
        #expect(ScheduleMath.upcomingAlertDates(of: once(7, 0), after: date("2026-11-22T06:00:00Z"), count: 5, in: berlin)
            == [date("2026-11-23T06:00:00Z")])
        #expect(ScheduleMath.upcomingAlertDates(of: once(7, 0), after: date("2026-11-22T05:59:59Z"), count: 5, in: berlin)
            == [date("2026-11-22T06:00:00Z")])
    }

    @Test("A fixed date previews as itself, or nothing once past")
    func fixedPreview() {
        let fixed = Alarm.Schedule.fixed(date("2026-12-24T17:00:00Z"))
        #expect(ScheduleMath.upcomingAlertDates(of: fixed, after: date("2026-11-22T00:00:00Z"), count: 3, in: .gmt)
            == [date("2026-12-24T17:00:00Z")])
        #expect(ScheduleMath.upcomingAlertDates(of: fixed, after: date("2026-12-25T00:00:00Z"), count: 3, in: .gmt).isEmpty)
    }

    /// Compares many random schedules with Python's zoneinfo, an independent implementation of
    /// the same rule (fold=0 reads a gap time with the earlier offset and a repeated time as its first).
    @Test("Next alert dates agree with Python's zoneinfo for random schedules and zones")
    func agreesWithZoneinfo() throws {
        let zones = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "America/Santiago",
                     "Europe/London", "Pacific/Chatham", "America/Sao_Paulo", "Asia/Kolkata", "America/St_Johns",
                     "Africa/Casablanca", "Asia/Tehran", "Pacific/Apia", "UTC"]
        var generator = SplitMix64(seed: 0xA1A2_2026)
        struct Case: Codable { var zone: String; var hour: Int; var minute: Int; var weekdays: [Int]; var after: Double; var swift: [Double] }
        var cases: [Case] = []
        for _ in 0..<400 {
            let zoneID = zones[Int(generator.next() % UInt64(zones.count))]
            // Minutes that land in gaps and folds often: around 00:00–03:00 half the time.
            let hour = generator.next() % 2 == 0 ? Int(generator.next() % 4) : Int(generator.next() % 24)
            let minute = [0, 15, 30, 45, Int(generator.next() % 60)][Int(generator.next() % 5)]
            let weekdays = (0..<7).filter { _ in generator.next() % 3 == 0 }
            let after = 1_767_225_600 + Double(generator.next() % (4 * 365 * 86_400)) // 2026-01-01 … 2029
            let schedule: Alarm.Schedule = weekdays.isEmpty
                ? once(hour, minute)
                : weekly(hour, minute, weekdays.map { WeekdayName.fullNames[$0].1 })
            let dates = ScheduleMath.upcomingAlertDates(of: schedule, after: Date(timeIntervalSince1970: after),
                                                        count: 6, in: zone(zoneID))
            cases.append(Case(zone: zoneID, hour: hour, minute: minute, weekdays: weekdays, after: after,
                              swift: dates.map(\.timeIntervalSince1970)))
        }
        let oracle = """
        import json, sys
        from datetime import datetime, timedelta, timezone
        from zoneinfo import ZoneInfo
        out = []
        for c in json.load(sys.stdin):
            z = ZoneInfo(c["zone"]); after = c["after"]
            days = set(c["weekdays"]) or set(range(7))
            d = datetime.fromtimestamp(after, z).date() - timedelta(days=1)
            found = []
            while len(found) < (6 if c["weekdays"] else 1):
                if (d.weekday() + 1) % 7 in days:
                    t = datetime(d.year, d.month, d.day, c["hour"], c["minute"], tzinfo=z).timestamp()
                    if t > after: found.append(t)
                d += timedelta(days=1)
            out.append(found)
        json.dump(out, sys.stdout)
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", oracle]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: JSONEncoder().encode(cases))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected = try JSONDecoder().decode([[Double]].self, from: data)
        #expect(expected.count == cases.count)
        var mismatches = 0
        for (testCase, python) in zip(cases, expected) where testCase.swift != python {
            mismatches += 1
            Issue.record("\(testCase.zone) \(testCase.hour):\(testCase.minute) days \(testCase.weekdays) after \(testCase.after): swift \(testCase.swift) python \(python)")
        }
        #expect(mismatches == 0)
    }
}

/// A small deterministic random number generator, so the property test is repeatable.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
