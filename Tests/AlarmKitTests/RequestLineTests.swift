import AlarmKit
import Foundation
import Testing

@Suite("One line of human syntax: a timer or an alarm, then a title")
struct RequestLineTests {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    @Test("Timers: the longest leading duration, then the title", arguments: [
        ("10m Tea", 600.0, "Tea" as String?), ("10 min Tea", 600, "Tea"), ("1h30m Slow roast", 5400, "Slow roast"),
        ("1 hour 30 minutes", 5400, nil), ("  90s   Eggs  ", 90, "Eggs"),
    ])
    func timers(text: String, seconds: TimeInterval, title: String?) throws {
        #expect(try RequestLine(parsing: text) == .timer(duration: seconds, title: title))
    }

    @Test("Two lines are refused, not made one timer titled with the second; a line break at the end is no second line")
    func severalLines() throws {
        let error = #expect(throws: HumanSyntaxError.self) { try RequestLine(parsing: "10m Tea\n07:00 Wake") }
        #expect(error?.message.hasPrefix("the text holds several lines: write one timer or alarm at a time") == true)
        #expect(try RequestLine(parsing: "10m Tea\n") == .timer(duration: 600, title: "Tea"))
        #expect(try RequestLine(parsing: "\r\n10m Tea \r\n \n") == .timer(duration: 600, title: "Tea"))
    }

    @Test("Alarms: a time of day, the days that follow, then the title")
    func alarms() throws {
        let weekdays = try WeekdayList.recurrence(["weekdays"])
        #expect(try RequestLine(parsing: "07:00 weekdays Work")
            == .alarm(.relative(.init(time: .init(hour: 7, minute: 0), repeats: weekdays)), title: "Work"))
        #expect(try RequestLine(parsing: "6:45 mon,wed fri")
            == .alarm(.relative(.init(time: .init(hour: 6, minute: 45), repeats: .weekly([.monday, .wednesday, .friday]))), title: nil))
        #expect(try RequestLine(parsing: "07:00 Wake up")
            == .alarm(.relative(.init(time: .init(hour: 7, minute: 0))), title: "Wake up"))
    }

    @Test("A misspelt day is refused, not taken for the title of an alarm that would ring once", arguments: [
        ("07:00 weekdys Work", "'weekdys' is not a day: did you mean 'weekdays'? ", "07:00 once weekdys Work)"),
        ("7am tuesdy", "'tuesdy' is not a day: did you mean 'tuesday'? ", "7am once tuesdy)"),
        ("7 am wendsday", "'wendsday' is not a day: did you mean 'wednesday'? ", "7 am once wendsday)"),
        ("07:00 tuesdya Gym", "'tuesdya' is not a day: did you mean 'tuesday'? ", "07:00 once tuesdya Gym)"),
        ("07:00 mnday", "'mnday' is not a day: did you mean 'monday'? ", "07:00 once mnday)"),
        ("07:00 mondy", "'mondy' is not a day: did you mean 'monday'? ", "07:00 once mondy)"),
        ("07:00 mon,wed,fir Gym", "'fir' is not a day (", "07:00 once mon,wed,fir Gym)"),
        ("6:30 mon-wed-fri", "'mon-wed-fri' is not a day (", "6:30 once mon-wed-fri)"),
    ])
    func misspeltDays(text: String, problem: String, escape: String) {
        #expect {
            try RequestLine(parsing: text)
        } throws: { error in
            guard case .unreadable(let message)? = error as? HumanSyntaxError else { return false }
            return message.hasPrefix(problem) && message.hasSuffix(escape)
        }
    }

    @Test("The edit distance of the suggestions counts a swap of neighbours as one edit")
    func editDistance() {
        #expect(EditDistance.between("tuesdya", "tuesday") == 1)
        #expect(EditDistance.between("kitten", "sitting") == 3)
        #expect(EditDistance.between("", "abc") == 3 && EditDistance.between("abc", "") == 3 && EditDistance.between("ab", "ab") == 0)
        #expect(EditDistance.between("ca", "abc") == 3, "a swap is not edited again afterwards")
    }

    @Test("Titles unlike a day, titles after once, plural days, and a separate am or pm", arguments: [
        ("07:00 Sue", nil, "Sue" as String?), ("07:00 Dinner party", nil, "Dinner party"), ("07:00 Fridge defrost", nil, "Fridge defrost"),
        ("07:00 Weekly review", nil, "Weekly review"),
        ("07:00 once weekdys Work", nil, "weekdys Work"), ("07:00 once Daily standup", nil, "Daily standup"), ("07:00 mondays Gym", [Locale.Weekday.monday], "Gym"),
        ("7 am Wake", nil, "Wake"), ("7 PM", nil, nil), ("07:00 Daisy", nil, "Daisy"), ("07:00 Dairy run", nil, "Dairy run"), ("07:00 Mondo", nil, "Mondo"), ("07:00 Monday's run", nil, "Monday's run"),
        ("07:00 Sun-salutation", nil, "Sun-salutation"),
    ])
    func notMisspelt(text: String, days: [Locale.Weekday]?, title: String?) throws {
        guard case .alarm(.relative(let relative), let written) = try RequestLine(parsing: text) else {
            Issue.record("not an alarm: \(text)")
            return
        }
        #expect(written == title)
        #expect(relative.repeats == (days.map { .weekly($0) } ?? .never))
        #expect(relative.time.hour == (text.hasPrefix("7 PM") ? 19 : 7))
    }

    @Test("An am or pm after the time belongs to it, written apart too: 6:45 pm is 18:45, never 06:45")
    func meridiemApart() throws {
        for (text, hour, minute) in [("6:45 pm Dinner", 18, 45), ("12:30 am", 0, 30), ("10 PM Bed", 22, 0)] {
            guard case .alarm(.relative(let relative), _) = try RequestLine(parsing: text) else { Issue.record("\(text)"); continue }
            #expect(relative.time == .init(hour: hour, minute: minute), "\(text)")
        }
        #expect(throws: HumanSyntaxError.self) { try RequestLine(parsing: "19:00 pm Late") }
        #expect(throws: HumanSyntaxError.self) { try RequestLine(parsing: "07:00 weekdays once Work") }
    }

    @Test("Dates: in the node's zone unless written with an offset")
    func dates() throws {
        let eve = try RequestLine(parsing: "2026-12-24T18:00 Eve")
        #expect(eve.needsTimeZone)
        #expect(try eve.configuration(in: berlin).schedule == .fixed(AlarmJSON.date(from: "2026-12-24T17:00:00Z")!))
        #expect(try eve.configuration(in: berlin).attributes.presentation.alert.title == "Eve")
        let spaced = try RequestLine(parsing: "2026-12-24 18:00 Eve")
        #expect(spaced == eve)
        let exact = try RequestLine(parsing: "2026-12-24T17:00Z")
        #expect(!exact.needsTimeZone)
        #expect(try exact.configuration(in: .gmt).attributes.presentation.alert.title == "Alarm")
    }

    @Test("The configurations carry alarmctl's defaults")
    func defaults() throws {
        let timer = try RequestLine(parsing: "10m Tea").configuration(in: .gmt)
        #expect(timer == (try AlarmRequest.timer(duration: 600, title: "Tea", snooze: nil, sound: nil)))
        let alarm = try RequestLine(parsing: "07:00 weekdays").configuration(in: .gmt)
        #expect(alarm.countdownDuration?.postAlert == AlarmRequest.defaultAlarmSnooze)
        #expect(alarm.attributes.presentation.alert.title == "Alarm")
        #expect(alarm.attributes.presentation.alert.secondaryButton?.text == "Snooze")
    }

    @Test("Unreadable lines are errors that name the accepted forms", arguments: [
        "", "   ", "Tea", "10 Tea", "25:00 Late", "2026-02-30T07:00 Never", "8d Long",
    ])
    func unreadable(text: String) {
        #expect {
            try RequestLine(parsing: text)
        } throws: { error in
            guard case .unreadable(let message)? = error as? HumanSyntaxError else { return false }
            return message.contains(text == "8d Long" ? DurationArgument.acceptedForms : RequestLine.acceptedForms)
        }
    }

    @Test("alarmctl timer's words: a duration, then the title unless --title gives one")
    func timerWords() throws {
        #expect(try RequestLine.timer(["10m", "Tea"], title: nil) == (600, "Tea"))
        #expect(try RequestLine.timer(["10", "minutes"], title: nil) == (600, nil))
        #expect(try RequestLine.timer(["1h30m"], title: "Roast") == (5400, "Roast"))
        // With --title, every word is the duration, as before: nothing is silently dropped.
        #expect(throws: HumanSyntaxError.unreadable("timer: '10m Tea' is not a duration: \(DurationArgument.acceptedForms)")) {
            try RequestLine.timer(["10m", "Tea"], title: "Coffee")
        }
        #expect(throws: HumanSyntaxError.unreadable("timer: '07:00' is not a duration: \(DurationArgument.acceptedForms)")) {
            try RequestLine.timer(["07:00"], title: nil)
        }
        // A title that starts with a digit is a mistyped duration; a duration's own problem is named.
        #expect(throws: HumanSyntaxError.unreadable("timer: '1h 30' is not a duration: \(DurationArgument.acceptedForms)")) {
            try RequestLine.timer(["1h", "30"], title: nil)
        }
        #expect(throws: HumanSyntaxError.unreadable("timer: '8d' is out of range: \(DurationArgument.acceptedForms)")) {
            try RequestLine.timer(["8d", "Tea"], title: nil)
        }
        #expect(throws: HumanSyntaxError.unreadable("timer: '10' has no unit: write 10s, 10m or 10h")) {
            try RequestLine.timer(["10", "Tea"], title: nil)
        }
    }

    @Test("What the node would refuse names the part to change")
    func refused() throws {
        #expect(throws: HumanSyntaxError.refused(part: .title, reason: "must be 1 to 128 UTF-8 bytes, is 129")) {
            try RequestLine(parsing: "10m " + String(repeating: "x", count: 129)).configuration(in: .gmt)
        }
        // A date that has passed is named as it was written: in the node's zone, not in UTC.
        #expect {
            try RequestLine(parsing: "2026-01-10 07:30 Past").configuration(in: TimeZone(identifier: "Europe/Berlin")!)
        } throws: { error in
            let message = (error as? HumanSyntaxError)?.message ?? ""
            return message.hasPrefix("the date Sat 2026-01-10 07:30 GMT+1 has passed (it is ") && message.hasSuffix("): give a date in the future")
        }
    }
}
