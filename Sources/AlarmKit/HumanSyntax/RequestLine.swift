import FoundationEssentials

/// A timer or an alarm asked for in one line of human syntax, then a title:
/// `10m Tea`, `1 hour 30 min Roast`, `07:00 weekdays Work`, `6:45 mon,wed,fri`, `2026-12-24T18:00 Eve`.
///
/// The defaults are `alarmctl`'s: a timer's Repeat counts its duration again; an alarm snoozes
/// for nine minutes; the title is "Timer" or "Alarm" when none is written.
public enum RequestLine: Hashable, Sendable {
    /// A countdown of `duration` seconds that starts now.
    case timer(duration: TimeInterval, title: String?)
    /// An alarm on `schedule`.
    case alarm(ScheduleExpression, title: String?)

    /// The accepted forms, for error messages and help.
    public static let acceptedForms = """
        write a duration, a time of day with optional days, or a date, then an optional title: \
        10m Tea | 1h30m Roast | 07:00 Wake | 7am weekdays Work | 6:45 mon,wed,fri | 2026-12-24T18:00 Eve \
        (durations 1s to 7d; days mon..sun, mon-fri, weekdays, weekends, daily)
        """

    /// Refuses text of several lines (a multi-line template in Home Assistant): read as one, it
    /// would become one timer with the second line as its title. Blank lines around one are fine.
    public static func requireOneLine(_ text: String) throws(HumanSyntaxError) {
        guard text.split(whereSeparator: \.isNewline).filter({ !$0.allSatisfy(\.isWhitespace) }).count < 2 else {
            throw .unreadable("the text holds several lines: write one timer or alarm at a time (\(Self.acceptedForms))")
        }
    }

    /// Reads one line; the words after the duration, time and days, or date are the title.
    public init(parsing text: String) throws(HumanSyntaxError) {
        try Self.requireOneLine(text)
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let first = words.first else { throw .unreadable("nothing to schedule: \(Self.acceptedForms)") }
        func title(after count: Int) -> String? { count < words.count ? words[count...].joined(separator: " ") : nil }
        if first.first?.isNumber == true, first.contains("-") {
            let dateWords = !first.contains(where: { $0 == "T" || $0 == "t" }) && words.count > 1 && TimeOfDay.parse(words[1]) != nil ? 2 : 1
            guard let expression = try? ScheduleExpression.parse(Array(words.prefix(dateWords))) else {
                throw .unreadable("'\(words.prefix(dateWords).joined(separator: " "))' is not a date and time: \(Self.acceptedForms)")
            }
            self = .alarm(expression, title: title(after: dateWords))
        } else if let (time, timeWords) = TimeOfDay.leading(words) {
            var dayWords = timeWords
            // `once` ends the days: the words after it are the title, whatever they are.
            while dayWords < words.count, dayWords == timeWords || !["once", "never"].contains(words[dayWords - 1].lowercased()),
                  (try? WeekdayList.recurrence([words[dayWords]])) != nil { dayWords += 1 }
            // A misspelt day would otherwise start the title, and a weekday alarm would ring once.
            if dayWords == timeWords, dayWords < words.count, let problem = WeekdayList.misspelling(words[dayWords]) {
                throw .unreadable("\(problem) (\(WeekdayList.acceptedForms); a title that starts with it goes after once: "
                                  + "\(words[..<dayWords].joined(separator: " ")) once \(words[dayWords...].joined(separator: " ")))")
            }
            let repeats = try WeekdayList.recurrence(Array(words[timeWords..<dayWords]))
            self = .alarm(.relative(.init(time: time, repeats: repeats)), title: title(after: dayWords))
        } else {
            // The longest run of leading words that reads as a duration: `10 min Tea` is 10 minutes.
            guard let durationWords = (1...words.count).reversed().first(where: { count in
                let candidate = words.prefix(count).joined(separator: " ")
                return !DurationText.isPlainNumber(candidate) && DurationText.seconds(from: candidate) != nil
            }) else {
                if DurationText.isPlainNumber(first) {
                    throw .unreadable("\(DurationArgument.numberProblem(first)) (\(Self.acceptedForms))")
                }
                throw .unreadable("'\(first)' is not a duration, a time of day or a date: \(Self.acceptedForms)")
            }
            let duration = try DurationArgument.seconds(words.prefix(durationWords).joined(separator: " "), option: "the duration")
            self = .timer(duration: duration, title: title(after: durationWords))
        }
    }

    /// A timer's seconds and title from `alarmctl timer`'s words: `10m`, `10 minutes`, and without
    /// `--title` (`title` nil) also `10m Tea`, whose words after the duration are the title.
    /// A title starting with a digit (`1h 30`) is refused: more likely a mistyped duration.
    public static func timer(_ words: [String], title: String?) throws(HumanSyntaxError) -> (seconds: TimeInterval, title: String?) {
        let text = words.joined(separator: " ")
        if title == nil, case .timer(let seconds, let written)? = try? RequestLine(parsing: text), written?.first?.isNumber != true {
            return (seconds, written)
        }
        // `8d Tea`, `10 Tea`: what is wrong with the duration itself.
        if title == nil, words.count > 1, words[0].first?.isNumber == true { _ = try DurationArgument.seconds(words[0], option: "timer") }
        return (try DurationArgument.seconds(text, option: "timer"), title)
    }

    /// Whether the line needs the node's time zone to become an instant: a date written without offset.
    public var needsTimeZone: Bool { if case .alarm(let expression, _) = self { expression.needsTimeZone } else { false } }

    /// The configuration to schedule, with `alarmctl`'s defaults; a date without offset is read in `timeZone`.
    public func configuration(in timeZone: TimeZone) throws(HumanSyntaxError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        switch self {
        case .timer(let duration, let title):
            try AlarmRequest.timer(duration: duration, title: title, snooze: nil, sound: nil)
        case .alarm(let expression, let title):
            try AlarmRequest.alarm(schedule: expression.schedule(in: timeZone), title: title,
                                   snooze: AlarmRequest.defaultAlarmSnooze, preAlert: nil, sound: nil, timeZone: timeZone)
        }
    }
}
