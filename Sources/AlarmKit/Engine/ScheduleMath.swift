import FoundationEssentials

/// A calendar day in some time zone (proleptic Gregorian), written `"2026-11-22"`.
public struct LocalDay: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public let daysSinceEpoch: Int

    public init(daysSinceEpoch: Int) { self.daysSinceEpoch = daysSinceEpoch }

    public init(year: Int, month: Int, day: Int) {
        // Days from the civil date, counting in 400-year eras that start on March 1st.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        daysSinceEpoch = era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of this day.
    public var components: (year: Int, month: Int, day: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The weekday, Sunday = 0 … Saturday = 6 (1970-01-01 was a Thursday).
    public var weekdayIndex: Int { ((daysSinceEpoch % 7) + 11) % 7 }

    /// The weekdays' short English names, by ``weekdayIndex``: `Sun` … `Sat`.
    public static let weekdayAbbreviations = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    public func adding(days: Int) -> LocalDay { LocalDay(daysSinceEpoch: daysSinceEpoch + days) }

    public static func < (lhs: LocalDay, rhs: LocalDay) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    public var description: String {
        let (year, month, day) = components
        return "\(zeroPadded(year, 4))-\(zeroPadded(month, 2))-\(zeroPadded(day, 2))"
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, parts.allSatisfy({ (0...9999).contains($0) }) else { throw decoder.dataCorrupted("'\(text)' is not a day like 2026-11-22") }
        self.init(year: parts[0], month: parts[1], day: parts[2])
    }

    public func encode(to encoder: any Encoder) throws { try description.encode(to: encoder) }
}

/// `value` in decimal with leading zeros up to `width` digits: `zeroPadded(7, 2)` is `07`.
package func zeroPadded(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

/// When schedules alert, with the daylight-saving rules of docs/time.md. Pure functions of their inputs.
public enum ScheduleMath {
    /// The local day that `date` falls on in `timeZone`.
    public static func localDay(of date: Date, in timeZone: TimeZone) -> LocalDay {
        let local = date.timeIntervalSince1970 + Double(timeZone.secondsFromGMT(for: date))
        return LocalDay(daysSinceEpoch: Int((local / 86_400).rounded(.down)))
    }

    /// The local time of day of `date` in `timeZone`, to the minute.
    public static func localTime(of date: Date, in timeZone: TimeZone) -> Alarm.Schedule.Relative.Time {
        let local = date.timeIntervalSince1970 + Double(timeZone.secondsFromGMT(for: date))
        let secondOfDay = Int(local - (local / 86_400).rounded(.down) * 86_400)
        return .init(hour: secondOfDay / 3600, minute: secondOfDay % 3600 / 60)
    }

    /// `date` as a clock in `timeZone` shows it, with the zone's abbreviation, which Foundation on Linux gives as the offset
    /// in force then: `Mon 2026-11-23 07:00 GMT+1` in Berlin.
    public static func localText(of date: Date, in timeZone: TimeZone) -> String {
        let zone = timeZone.abbreviation(for: date) ?? timeZone.identifier
        let day = localDay(of: date, in: timeZone)
        return "\(LocalDay.weekdayAbbreviations[day.weekdayIndex]) \(day) \(timeOfDayText(of: date, in: timeZone)) \(zone)"
    }

    /// The time of day of `date` in `timeZone`: `07:00`, or `07:00:30` when the seconds are not zero
    /// or `withSeconds` is set.
    public static func timeOfDayText(of date: Date, in timeZone: TimeZone, withSeconds: Bool = false) -> String {
        let local = date.timeIntervalSince1970 + TimeInterval(timeZone.secondsFromGMT(for: date))
        let secondOfDay = Int(local - (local / 86_400).rounded(.down) * 86_400)
        let text = "\(zeroPadded(secondOfDay / 3600, 2)):\(zeroPadded(secondOfDay % 3600 / 60, 2))"
        return secondOfDay % 60 == 0 && !withSeconds ? text : "\(text):\(zeroPadded(secondOfDay % 60, 2))"
    }

    /// The instant at which `time` on `day` alerts in `timeZone`.
    ///
    /// A time that occurs once is that instant. A time that occurs twice (fall back) is its first
    /// occurrence. A time that does not exist (spring forward) is shifted by the gap: it is read
    /// with the offset in force before the transition, so 02:30 in a 02:00→03:00 gap is 03:30.
    public static func instant(of time: Alarm.Schedule.Relative.Time, on day: LocalDay, in timeZone: TimeZone) -> Date {
        let wall = Double(day.daysSinceEpoch * 86_400 + time.hour * 3600 + time.minute * 60)
        // The offsets in force a day either side; real zones never change offset twice in two days.
        let offsetBefore = Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - 86_400)))
        let offsetAfter = Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall + 86_400)))
        let candidates = [wall - offsetBefore, wall - offsetAfter].filter { instant in
            Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: instant))) == wall - instant
        }
        return Date(timeIntervalSince1970: candidates.min() ?? wall - offsetBefore)
    }

    /// The first occurrence of `relative` strictly after `date` whose local day is later than
    /// `lastDay` (the day of the occurrence that last alerted): the local day it belongs to and
    /// the instant it alerts; `nil` for an empty weekly set.
    public static func nextOccurrence(
        of relative: Alarm.Schedule.Relative, after date: Date, lastDay: LocalDay? = nil, in timeZone: TimeZone
    ) -> (day: LocalDay, date: Date)? {
        let weekdays: Set<Int> = switch relative.repeats {
        case .never: Set(0..<7)
        case .weekly(let days): Set(days.map(\.indexFromSunday))
        }
        guard !weekdays.isEmpty else { return nil }
        // Start a day early: a shifted occurrence of the previous day can still lie ahead.
        var day = localDay(of: date, in: timeZone).adding(days: -1)
        if let lastDay, day <= lastDay { day = lastDay.adding(days: 1) }
        for _ in 0..<16 {
            defer { day = day.adding(days: 1) }
            guard weekdays.contains(day.weekdayIndex) else { continue }
            let instant = instant(of: relative.time, on: day, in: timeZone)
            if instant > date { return (day, instant) }
        }
        return nil
    }

    /// The next `count` alert dates of `schedule` strictly after `date`: the preview of a schedule.
    /// A fixed date or a relative schedule that does not repeat alerts at most once.
    public static func upcomingAlertDates(
        of schedule: Alarm.Schedule, after date: Date, count: Int, in timeZone: TimeZone
    ) -> [Date] {
        switch schedule {
        case .fixed(let fixed):
            return fixed > date && count > 0 ? [fixed] : []
        case .relative(let relative):
            var dates: [Date] = []
            var lastDay: LocalDay?
            var after = date
            while dates.count < count, let next = nextOccurrence(of: relative, after: after, lastDay: lastDay, in: timeZone) {
                dates.append(next.date)
                if case .never = relative.repeats { break }
                lastDay = next.day
                after = next.date
            }
            return dates
        }
    }
}
