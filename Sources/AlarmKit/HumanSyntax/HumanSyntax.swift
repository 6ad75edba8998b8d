import FoundationEssentials

/// Durations as people write them (alarmctl, Home Assistant's text entity): `90s`, `10m`, `1h30m`, `1d`, `10 min`,
/// `2 hours`. A bare number is refused: `10` could mean seconds or minutes.
public enum DurationArgument {
    /// The accepted forms, for error messages and help.
    public static let acceptedForms = "write it as 90s, 10m, 10 min, 1h30m, 2 hours or 1d, from 1s to 7d"

    /// What is wrong with a number written without a unit: `0` with any unit is too short.
    static func numberProblem(_ number: String) -> String {
        Double(number) == 0 ? "'\(number)' is out of range, from 1s to 7d" : "'\(number)' has no unit: write \(number)s, \(number)m or \(number)h"
    }

    /// The seconds `text` names, within the node's limits (1 s to 7 days).
    ///
    /// - Parameter option: what the message calls the value, e.g. `--snooze` or `timer`.
    public static func seconds(_ text: String, option: String) throws(HumanSyntaxError) -> TimeInterval {
        if DurationText.isPlainNumber(text) { throw .unreadable("\(option): \(numberProblem(text))") }
        guard let seconds = DurationText.seconds(from: text), seconds.isFinite else {
            throw .unreadable("\(option): '\(text)' is not a duration: \(acceptedForms)")
        }
        guard AlarmLimits.durations.contains(seconds) else {
            throw .unreadable("\(option): '\(text)' is out of range: \(acceptedForms)")
        }
        return seconds
    }
}

/// A date and time on a wall clock, with the UTC offset when one was written.
public struct LocalDateTime: Hashable, Sendable {
    public var day: LocalDay
    public var time: Alarm.Schedule.Relative.Time
    public var second: Int
    /// Seconds east of UTC; nil when the text named no offset (the time is then in some zone).
    public var utcOffset: Int?

    /// The instant: with its offset when it has one, otherwise read in `timeZone` with the daemon's
    /// rules (a time skipped by a daylight-saving change is shifted by the gap; a repeated one is
    /// its first occurrence).
    public func date(in timeZone: TimeZone) -> Date {
        if let utcOffset {
            let wall = day.daysSinceEpoch * 86_400 + time.hour * 3600 + time.minute * 60 + second
            return Date(timeIntervalSince1970: TimeInterval(wall - utcOffset))
        }
        return ScheduleMath.instant(of: time, on: day, in: timeZone).addingTimeInterval(TimeInterval(second))
    }

    /// Reads `YYYY-MM-DDTHH:MM[:SS]` (or a space for the `T`), optionally followed by `Z`, `±HH:MM`,
    /// `±HHMM` or `±HH`; nil when `text` is not of that form or names no real date.
    public init?(parsing text: String) {
        guard let separator = text.firstIndex(where: { $0 == "T" || $0 == "t" || $0 == " " }) else { return nil }
        let dateFields = text[..<separator].split(separator: "-", omittingEmptySubsequences: false)
        guard dateFields.count == 3, dateFields[0].count == 4, dateFields[1].count == 2, dateFields[2].count == 2,
              let year = Self.number(dateFields[0]), let month = Self.number(dateFields[1]),
              let dayOfMonth = Self.number(dateFields[2]) else { return nil }
        let day = LocalDay(year: year, month: month, day: dayOfMonth)
        guard day.components == (year, month, dayOfMonth) else { return nil }

        var clock = text[text.index(after: separator)...]
        var offset: Int?
        if clock.hasSuffix("Z") || clock.hasSuffix("z") {
            offset = 0
            clock = clock.dropLast()
        } else if let sign = clock.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            guard let parsed = Self.utcOffset(clock[sign...]) else { return nil }
            offset = parsed
            clock = clock[..<sign]
        }
        let clockFields = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(clockFields.count),
              let time = TimeOfDay.parse(clockFields[0...1].joined(separator: ":")) else { return nil }
        let seconds = clockFields.count == 3 ? clockFields[2] : "00"
        guard seconds.count == 2, let second = Self.number(seconds), second < 60 else { return nil }
        (self.day, self.time, self.second, self.utcOffset) = (day, time, second, offset)
    }

    /// `+01:00`, `-0530`, `+02` as seconds east of UTC.
    private static func utcOffset(_ text: Substring) -> Int? {
        let sign = text.first == "-" ? -1 : 1
        let digits = text.dropFirst().filter { $0 != ":" }
        guard digits.count == 2 || digits.count == 4, let value = number(digits[...]) else { return nil }
        let (hours, minutes) = digits.count == 2 ? (value, 0) : value.quotientAndRemainder(dividingBy: 100)
        guard hours <= 18, minutes < 60 else { return nil }
        return sign * (hours * 3600 + minutes * 60)
    }

    static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}

/// Times of day as `HH:MM`, 24-hour; ``parseWritten(_:)`` also reads the 12-hour forms people write.
public enum TimeOfDay {
    /// Reads `7:00`, `07:00` or `23:59`; nil otherwise.
    public static func parse(_ text: String) -> Alarm.Schedule.Relative.Time? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2, (1...2).contains(fields[0].count), fields[1].count == 2,
              let hour = LocalDateTime.number(fields[0]), let minute = LocalDateTime.number(fields[1]),
              hour < 24, minute < 60 else { return nil }
        return .init(hour: hour, minute: minute)
    }

    /// Reads a time of day as people write one: `07:00`, `7:00`, and on a 12-hour clock `7am`,
    /// `7:30pm`, `12am` (midnight) or `12pm` (noon), in any case; nil otherwise.
    public static func parseWritten(_ text: String) -> Alarm.Schedule.Relative.Time? {
        let lower = text.lowercased()
        guard let half = ["am", "pm"].first(where: { lower.hasSuffix($0) }) else { return parse(text) }
        let clock = lower.dropLast(2)
        let time = clock.contains(":") ? parse(String(clock)) : LocalDateTime.number(clock).map { .init(hour: $0, minute: 0) }
        guard let time, (1...12).contains(time.hour) else { return nil }
        return .init(hour: time.hour % 12 + (half == "pm" ? 12 : 0), minute: time.minute)
    }

    /// The time of day `words` start with and how many words it takes: `7:30`, `7am`, or `7 am`.
    /// An `am` or `pm` after the time belongs to it: `6:45 pm` is 18:45, and `19:00 pm` is no time.
    public static func leading(_ words: [String]) -> (Alarm.Schedule.Relative.Time, Int)? {
        guard words.count > 1, ["am", "pm"].contains(words[1].lowercased()) else { return words.first.flatMap(parseWritten).map { ($0, 1) } }
        return parseWritten(words[0] + words[1]).map { ($0, 2) }
    }

    /// `07:00`.
    public static func format(_ time: Alarm.Schedule.Relative.Time) -> String {
        "\(zeroPadded(time.hour, 2)):\(zeroPadded(time.minute, 2))"
    }
}

/// Weekday sets as people write them: `mon,wed,fri`, `monday`, `mon-fri`, `weekdays`, `weekends`, `daily`.
public enum WeekdayList {
    public static let acceptedForms =
        "use mon,tue,wed,thu,fri,sat,sun (or full names), ranges such as mon-fri, weekdays, weekends, daily, or once"

    /// Monday first, as alarm clocks list them.
    public static let week: [Locale.Weekday] = [.monday, .tuesday, .wednesday, .thursday, .friday, .saturday, .sunday]
    static let names = week.map(WeekdayName.fullName(of:))

    /// The recurrence that `words` name (commas or spaces between days); `.never` for none or `once`.
    public static func recurrence(_ words: [String]) throws(HumanSyntaxError) -> Alarm.Schedule.Relative.Recurrence {
        let tokens = words.flatMap { $0.lowercased().split(separator: ",") }
            .map { String($0.trimming(where: { $0.isWhitespace && !$0.isNewline })) }
            .filter { !$0.isEmpty }
        if tokens.isEmpty || tokens == ["once"] || tokens == ["never"] { return .never }
        var days = Set<Int>()
        for token in tokens {
            switch token {
            case "daily", "everyday": days.formUnion(0..<7)
            case "weekdays", "weekday": days.formUnion(0..<5)
            case "weekends", "weekend": days.formUnion([5, 6])
            case "once", "never": throw .unreadable("'\(token)' stands alone: give days, or once without them")
            default:
                let ends = token.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
                guard (1...2).contains(ends.count), let first = dayIndex(ends[0]), let last = dayIndex(ends.last!) else {
                    throw .unreadable("'\(token)' is not a weekday: \(acceptedForms)")
                }
                // From first to last, wrapping past Sunday (`sat-mon`).
                days.formUnion((0...((last - first + 7) % 7)).map { (first + $0) % 7 })
            }
        }
        return .weekly(days.sorted().map { week[$0] })
    }

    /// How `schedule` repeats: `once` for a date, its days for a time of day; nil for a timer.
    public static func describe(_ schedule: Alarm.Schedule?) -> String? {
        switch schedule {
        case nil: nil
        case .fixed?: "once"
        case .relative(let relative)?: describe(relative.repeats)
        }
    }

    /// How a recurrence reads in a table: `once`, `daily`, `weekdays`, `weekends` or `mon,wed,fri`.
    public static func describe(_ recurrence: Alarm.Schedule.Relative.Recurrence) -> String {
        guard case .weekly(let days) = recurrence else { return "once" }
        let indexes = Set(days.compactMap { week.firstIndex(of: $0) })
        switch indexes {
        case Set(0..<7): return "daily"
        case Set(0..<5): return "weekdays"
        case [5, 6]: return "weekends"
        default: return indexes.sorted().map { String(names[$0].prefix(3)) }.joined(separator: ",")
        }
    }

    /// What is wrong with `word`, which ``recurrence(_:)`` refused, when it looks like days: a list
    /// or range with a day in it (`mon,wed,fir`), or a misspelt day word (`weekdys`); nil otherwise.
    public static func misspelling(_ word: String) -> String? {
        let lower = word.lowercased()
        let words = names + ["daily", "everyday", "weekdays", "weekends"]
        let parts = lower.split(whereSeparator: { $0 == "," || $0 == "-" }).map(String.init)
        // A list of days with a short one that does not read (`mon,wed,fir`); not `Sun-salutation`.
        if parts.count > 1, parts.contains(where: { dayIndex($0) != nil }),
           parts.allSatisfy({ $0.count <= 3 || dayIndex($0) != nil || words.contains($0) }) {
            return "'\(parts.first { dayIndex($0) == nil && !words.contains($0) } ?? word)' is not a day"
        }
        // Short words (`Sue`; `Daisy` and `Dairy`, a letter from `daily`) and possessives (`Monday's`)
        // are left to be titles; a five-letter word that lacks a letter of a day (`mnday`) is not.
        guard lower.count >= 5, !lower.contains("'") else { return nil }
        let candidates = lower.count > 5 ? words : names.filter { $0.count == 6 }
        guard let meant = candidates.min(by: { EditDistance.between(lower, $0) < EditDistance.between(lower, $1) }),
              EditDistance.between(lower, meant) <= (lower.count >= 8 ? 2 : 1) else { return nil }
        return "'\(word)' is not a day: did you mean '\(meant)'?"
    }

    /// Monday = 0; a full name (`mondays` too), or an unambiguous start of one of at least two letters.
    private static func dayIndex(_ word: String) -> Int? {
        if word.hasSuffix("s"), let index = names.firstIndex(of: String(word.dropLast())) { return index }
        guard word.count >= 2 else { return nil }
        let matches = names.indices.filter { names[$0].hasPrefix(word) }
        return matches.count == 1 ? matches[0] : nil
    }
}

/// When an alarm alerts, as people write it (`alarmctl alarm`, `alarmctl preview`, ``RequestLine``).
public enum ScheduleExpression: Hashable, Sendable {
    /// A time of day in the node's zone, once or on weekdays.
    case relative(Alarm.Schedule.Relative)
    /// A fixed date: in the node's zone unless written with an offset.
    case fixed(LocalDateTime)

    public static let acceptedForms = """
          HH:MM [DAYS]      a time of day in the node's time zone, once or on DAYS:
                            07:00   7:30 mon,wed,fri   06:45 weekdays   9:00 daily
                            (or 12-hour: 7am, 7 am, 6:45pm)
          DAYS              mon,tue,wed,thu,fri,sat,sun (or full names), mon-fri,
                            weekdays, weekends, daily, once
          YYYY-MM-DDTHH:MM  a fixed date in the node's time zone: 2026-12-24T18:00
          …with an offset   that instant: 2026-12-24T18:00+01:00, 2026-12-24T17:00Z
        """

    /// Reads the words of a schedule: `["07:00", "mon,wed,fri"]`, `["07:00 weekdays"]`,
    /// `["2026-12-24T18:00"]` or `["2026-12-24", "18:00"]`.
    public static func parse(_ words: [String]) throws(HumanSyntaxError) -> ScheduleExpression {
        var tokens = words.flatMap { $0.split(whereSeparator: \.isWhitespace).map(String.init) }
        guard let first = tokens.first else { throw .unreadable("a schedule is missing; accepted forms:\n\(acceptedForms)") }
        if first.count >= 10, first.prefix(4).allSatisfy(\.isNumber), first.dropFirst(4).first == "-" {
            var text = first
            if !first.contains(where: { $0 == "T" || $0 == "t" }), tokens.count >= 2 {
                text += " " + tokens[1]
                tokens.removeFirst()
            }
            guard let dateTime = LocalDateTime(parsing: text) else {
                throw .unreadable("'\(text)' is not a date and time; accepted forms:\n\(acceptedForms)")
            }
            guard tokens.count == 1 else {
                throw .unreadable("a fixed date does not repeat: remove '\(tokens.dropFirst().joined(separator: " "))', "
                    + "or schedule a time of day such as 07:00 mon,wed,fri")
            }
            return .fixed(dateTime)
        }
        guard let (time, timeWords) = TimeOfDay.leading(tokens) else {
            throw .unreadable("'\(first)' is not a time of day or a date; accepted forms:\n\(acceptedForms)")
        }
        return .relative(.init(time: time, repeats: try WeekdayList.recurrence(Array(tokens.dropFirst(timeWords)))))
    }

    /// What to say when ``parse(_:)`` refused `words` because they end in words that are neither
    /// days nor misspelt days (`07:00 mon tue Wake up`): a title typed where the days go, which
    /// belongs in the `titleOption`; nil when that is not the mistake.
    public static func strayTitle(in words: [String], titleOption: String) -> HumanSyntaxError? {
        let tokens = words.flatMap { $0.split(whereSeparator: \.isWhitespace).map(String.init) }
        guard let (_, timeWords) = TimeOfDay.leading(tokens) else { return nil }
        let title = tokens.dropFirst(timeWords).reversed()
            .prefix { (try? WeekdayList.recurrence([$0])) == nil && WeekdayList.misspelling($0) == nil }.reversed()
        guard let first = title.first else { return nil }
        return .unreadable("'\(first)' is not a weekday: for a title, use \(titleOption) \"\(title.joined(separator: " "))\"; for days, \(WeekdayList.acceptedForms)")
    }

    /// Whether the schedule needs the node's time zone to become an instant: a fixed date without offset.
    public var needsTimeZone: Bool { if case .fixed(let dateTime) = self { dateTime.utcOffset == nil } else { false } }

    /// The schedule, with a fixed date read in `timeZone` when it carries no offset.
    public func schedule(in timeZone: TimeZone) -> Alarm.Schedule {
        switch self {
        case .relative(let relative): .relative(relative)
        case .fixed(let dateTime): .fixed(dateTime.date(in: timeZone))
        }
    }
}

/// How many single-character insertions, deletions, substitutions and swaps of two neighbours
/// turn one text into another (the optimal string alignment distance), for the suggestions of
/// error messages ("did you mean …?"): `tuesdya` is one swap from `tuesday`.
public enum EditDistance {
    public static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var twoAbove: [Int] = [], above = Array(0...b.count)
        for i in stride(from: 1, through: a.count, by: 1) {
            var row = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                row[j] = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { row[j] = min(row[j], twoAbove[j - 2] + 1) }
            }
            (twoAbove, above) = (above, row)
        }
        return above[b.count]
    }
}
