import AlarmKit
import AlarmctlCore
import Foundation
import Testing

@Suite("Human syntax: durations, times, weekdays, dates")
struct HumanSyntaxTests {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    @Test("Durations as people write them", arguments: [
        ("90s", 90.0), ("10m", 600), ("1h30m", 5400), ("2h", 7200), ("1d", 86_400), ("7d", 604_800), ("1h1s", 3601),
        ("10 minutes", 600), ("10 min", 600), ("10mins", 600), ("1 hour 30 min", 5400),
    ])
    func durations(text: String, seconds: TimeInterval) throws {
        #expect(try DurationArgument.seconds(text, option: "--snooze") == seconds)
    }

    @Test("Bad durations are usage errors naming the option and the accepted forms", arguments: ["10x", "m10", "", "1m1h", "abc", "nan"])
    func badDurations(text: String) {
        #expect(throws: AlarmctlError.usage("--snooze: '\(text)' is not a duration: \(DurationArgument.acceptedForms)")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "--snooze") }
        }
    }

    @Test("A bare number is refused with the forms that say its unit", arguments: ["10", "45", "0.5"])
    func bareNumbers(text: String) {
        #expect(throws: AlarmctlError.usage("timer: '\(text)' has no unit: write \(text)s, \(text)m or \(text)h")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "timer") }
        }
    }

    @Test("A bare zero is out of range, not short of a unit that would not help", arguments: ["0", "0.0"])
    func bareZero(text: String) {
        #expect(throws: AlarmctlError.usage("timer: '\(text)' is out of range, from 1s to 7d")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "timer") }
        }
    }

    @Test("Durations outside 1 s … 7 days are refused before reaching the node", arguments: ["0s", "8d", "0.5s"])
    func outOfRange(text: String) {
        #expect(throws: AlarmctlError.usage("timer: '\(text)' is out of range: \(DurationArgument.acceptedForms)")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "timer") }
        }
    }

    @Test("Times of day, 24-hour")
    func times() {
        #expect(TimeOfDay.parse("07:00") == .init(hour: 7, minute: 0))
        #expect(TimeOfDay.parse("7:05") == .init(hour: 7, minute: 5))
        #expect(TimeOfDay.parse("23:59") == .init(hour: 23, minute: 59))
        for bad in ["24:00", "7", "07:60", "7:5", "007:00", "ab:cd", "07:00:00", "-1:00"] {
            #expect(TimeOfDay.parse(bad) == nil, "\(bad)")
        }
        #expect(TimeOfDay.format(.init(hour: 7, minute: 5)) == "07:05")
    }

    @Test("Times of day as people write them: 24-hour, or 12-hour with am or pm")
    func writtenTimes() throws {
        let written: [(String, Int, Int)] = [("07:00", 7, 0), ("7am", 7, 0), ("7AM", 7, 0), ("7:30pm", 19, 30), ("12am", 0, 0),
                                             ("12:15am", 0, 15), ("12pm", 12, 0), ("11:59PM", 23, 59)]
        for (text, hour, minute) in written {
            #expect(TimeOfDay.parseWritten(text) == .init(hour: hour, minute: minute), "\(text)")
        }
        for bad in ["0am", "13pm", "7", "am", "7:60am", "19:00pm", "7 am", "pm7"] {
            #expect(TimeOfDay.parseWritten(bad) == nil, "\(bad)")
        }
        // The ISO forms of a date stay 24-hour; alarmctl and the line syntax take the 12-hour ones.
        #expect(TimeOfDay.parse("7am") == nil)
        #expect(try ScheduleExpression.parse(["7am", "weekdays"]) == .relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly(WeekdayList.week.prefix(5).map { $0 }))))
        #expect(try ScheduleExpression.parse(["7", "am", "mondays"]) == .relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday]))),
                "alarmctl alarm 7 am mondays: the words as the shell splits them")
        #expect(try RequestLine(parsing: "6:45pm Dinner") == .alarm(.relative(.init(time: .init(hour: 18, minute: 45))), title: "Dinner"))
    }

    @Test("Weekday lists, names, ranges and keywords")
    func weekdays() throws {
        #expect(try WeekdayList.recurrence(["mon,wed,fri"]) == .weekly([.monday, .wednesday, .friday]))
        #expect(try WeekdayList.recurrence(["Friday", "monday"]) == .weekly([.monday, .friday]))
        #expect(try WeekdayList.recurrence(["mon-fri"]) == .weekly([.monday, .tuesday, .wednesday, .thursday, .friday]))
        #expect(try WeekdayList.recurrence(["fri-mon"]) == .weekly([.monday, .friday, .saturday, .sunday]))
        #expect(try WeekdayList.recurrence(["weekdays"]) == WeekdayList.recurrence(["mon-fri"]))
        #expect(try WeekdayList.recurrence(["weekends"]) == .weekly([.saturday, .sunday]))
        #expect(try WeekdayList.recurrence(["weekday"]) == WeekdayList.recurrence(["weekdays"]))
        #expect(try WeekdayList.recurrence(["weekend"]) == WeekdayList.recurrence(["weekends"]))
        #expect(try WeekdayList.recurrence(["daily"]) == .weekly(WeekdayList.week))
        #expect(try WeekdayList.recurrence(["tu,th"]) == .weekly([.tuesday, .thursday]))
        #expect(try WeekdayList.recurrence([]) == .never)
        #expect(try WeekdayList.recurrence(["once"]) == .never)
    }

    @Test("once with days is refused, saying it stands alone")
    func onceWithDays() {
        #expect(throws: AlarmctlError.usage("'once' stands alone: give days, or once without them")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try WeekdayList.recurrence(["once", "mon"]) }
        }
    }

    @Test("A misspelt weekday is named in the error", arguments: ["frx", "t", "mon-funday"])
    func badWeekdays(word: String) {
        let offending = word.split(separator: ",").first { !["mon"].contains($0) }.map(String.init) ?? word
        #expect(throws: AlarmctlError.usage("'\(offending)' is not a weekday: \(WeekdayList.acceptedForms)")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try WeekdayList.recurrence(["mon,\(word)"]) }
        }
    }

    @Test("A title typed where the days go is pointed to --title; misspelt days and good schedules are not")
    func strayTitle() {
        #expect(ScheduleExpression.strayTitle(in: ["07:00", "mon", "tue", "Wake", "up"], titleOption: "--title")
            == .unreadable("'Wake' is not a weekday: for a title, use --title \"Wake up\"; for days, \(WeekdayList.acceptedForms)"))
        #expect(ScheduleExpression.strayTitle(in: ["7 am Gym"], titleOption: "--title")
            == .unreadable("'Gym' is not a weekday: for a title, use --title \"Gym\"; for days, \(WeekdayList.acceptedForms)"))
        for words in [["07:00", "mon,wed,fir"], ["07:00", "weekdys"], ["07:00", "weekdays"], ["soon", "Tea"]] {
            #expect(ScheduleExpression.strayTitle(in: words, titleOption: "--title") == nil, "\(words)")
        }
    }

    @Test("Recurrences read back in short form")
    func describeRecurrence() throws {
        #expect(WeekdayList.describe(.never) == "once")
        #expect(WeekdayList.describe(try WeekdayList.recurrence(["mon-fri"])) == "weekdays")
        #expect(WeekdayList.describe(try WeekdayList.recurrence(["sat,sun"])) == "weekends")
        #expect(WeekdayList.describe(try WeekdayList.recurrence(["daily"])) == "daily")
        #expect(WeekdayList.describe(.weekly([.friday, .monday, .wednesday])) == "mon,wed,fri")
    }

    @Test("A time of day with days, in one word or several")
    func relativeSchedules() throws {
        let expected = ScheduleExpression.relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday, .wednesday, .friday])))
        #expect(try ScheduleExpression.parse(["07:00", "mon,wed,fri"]) == expected)
        #expect(try ScheduleExpression.parse(["07:00 mon,wed,fri"]) == expected)
        #expect(try ScheduleExpression.parse(["07:00", "mon", "wed", "fri"]) == expected)
        #expect(try ScheduleExpression.parse(["6:45"]) == .relative(.init(time: .init(hour: 6, minute: 45))))
        #expect(try ScheduleExpression.parse(["07:00"]).needsTimeZone == false)
    }

    @Test("A fixed date is read in the node's zone unless it has an offset")
    func fixedDates() throws {
        let local = try ScheduleExpression.parse(["2026-12-24T18:00"])
        #expect(local.needsTimeZone)
        #expect(local.schedule(in: berlin) == .fixed(AlarmJSON.date(from: "2026-12-24T17:00:00Z")!))
        #expect(try ScheduleExpression.parse(["2026-12-24", "18:00"]) == local)
        #expect(try ScheduleExpression.parse(["2026-12-24 18:00:30"]).schedule(in: berlin)
            == .fixed(AlarmJSON.date(from: "2026-12-24T17:00:30Z")!))

        let offsets = ["2026-12-24T18:00+01:00", "2026-12-24T18:00+0100", "2026-12-24T18:00+01", "2026-12-24T17:00Z", "2026-12-24T12:00-05:00"]
        for text in offsets {
            let expression = try ScheduleExpression.parse([text])
            #expect(!expression.needsTimeZone, "\(text)")
            #expect(expression.schedule(in: TimeZone(identifier: "Asia/Tokyo")!) == .fixed(AlarmJSON.date(from: "2026-12-24T17:00:00Z")!), "\(text)")
        }
    }

    @Test("A local date in a daylight-saving gap is shifted by the gap, as the daemon does")
    func fixedDateInGap() throws {
        let dateTime = try #require(LocalDateTime(parsing: "2026-03-29T02:30"))
        #expect(dateTime.date(in: berlin) == AlarmJSON.date(from: "2026-03-29T01:30:00Z"))
    }

    @Test("Bad dates and schedules are usage errors that show the accepted forms", arguments: [
        ["2026-02-30T07:00"], ["2026-13-01T07:00"], ["2026-12-24T25:00"], ["2026-12-24T18:00+25:00"], ["2026-12-24T18:00:61"],
        ["26-12-24T18:00"], ["2026-12-24"], ["noon"], ["25:00"], [],
    ])
    func badSchedules(words: [String]) {
        #expect {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try ScheduleExpression.parse(words) }
        } throws: { error in
            guard case AlarmctlError.usage(let message)? = error as? AlarmctlError else { return false }
            return message.contains(ScheduleExpression.acceptedForms)
        }
    }

    @Test("A fixed date does not take weekdays")
    func fixedDateWithDays() {
        #expect(throws: AlarmctlError.usage("a fixed date does not repeat: remove 'mon', or schedule a time of day such as 07:00 mon,wed,fri")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try ScheduleExpression.parse(["2026-12-24T18:00", "mon"]) }
        }
    }
}
