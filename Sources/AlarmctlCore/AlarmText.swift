import AlarmKit
import Foundation

/// How `alarmctl` words an alarm's parts: its kind, title, next alert, remaining time, repeats.
public enum AlarmText {
    /// `timer` (no schedule), `alarm` (a time of day) or `date` (a fixed date).
    public static func kind(of document: AlarmDocument) -> String {
        switch document.configuration.schedule {
        case nil: "timer"
        case .relative?: "alarm"
        case .fixed?: "date"
        }
    }

    /// The alert's title, `printable`.
    public static func title(of document: AlarmDocument) -> String {
        printable(document.configuration.attributes.presentation.alert.title)
    }

    /// `text` with each control character (a newline, the ESC that starts a terminal's escape
    /// sequence) replaced by `�`: text that anyone on the broker can set can then neither break
    /// a table's rows nor drive the terminal that shows it. `keepingLineFeeds` for whole outputs of lines.
    public static func printable(_ text: String, keepingLineFeeds: Bool = false) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control && !(keepingLineFeeds && $0 == "\n") ? "\u{FFFD}" : $0 }))
    }

    /// `once`, `daily`, `weekdays`, `mon,wed,fri`; `-` for a timer.
    public static func repeats(of document: AlarmDocument) -> String { WeekdayList.describe(document.configuration.schedule) ?? "-" }

    /// What comes next: `in 4:32` for a countdown, `4:32 left` when paused, `now` when alerting,
    /// and the next alert's wall-clock time (`tomorrow 07:00`) when scheduled.
    public static func next(of document: AlarmDocument, now: Date, timeZone: TimeZone) -> String {
        switch document.presentationState {
        case .countdown(let countdown)?: return "in \(clock(countdown.fireDate.timeIntervalSince(now)))"
        case .paused(let paused)?: return "\(clock(paused.totalCountdownDuration - paused.previouslyElapsedDuration)) left"
        case .alert?: return "now"
        case nil: return document.nextAlertDate.map { wallClock($0, now: now, timeZone: timeZone) } ?? "-"
        }
    }

    /// The share of the running or paused countdown that has elapsed (0…1), the seconds left and
    /// the countdown's length; nil when no countdown runs.
    public static func progress(of document: AlarmDocument, now: Date) -> (fraction: Double, remaining: TimeInterval, total: TimeInterval)? {
        let times: (total: TimeInterval, remaining: TimeInterval)? = switch document.presentationState {
        case .countdown(let countdown)?: (countdown.totalCountdownDuration, countdown.fireDate.timeIntervalSince(now))
        case .paused(let paused)?: (paused.totalCountdownDuration, paused.totalCountdownDuration - paused.previouslyElapsedDuration)
        default: nil
        }
        guard let (total, remaining) = times, total > 0 else { return nil }
        let clamped = min(max(remaining, 0), total)
        return (1 - clamped / total, clamped, total)
    }

    /// A countdown's time as a clock shows it, rounded up to the second: `0:05`, `4:32`, `1:02:03`, `2d 3:04:05`; `∞` past `Int`.
    public static func clock(_ seconds: TimeInterval) -> String {
        guard let total = Int(exactly: max(0, seconds).rounded(.up)) else { return "∞" }
        let (days, hours, minutes, secs) = (total / 86_400, total % 86_400 / 3600, total % 3600 / 60, total % 60)
        let dayPart = days > 0 ? "\(days)d " : ""
        if days > 0 || hours > 0 { return "\(dayPart)\(hours):\(zeroPadded(minutes, 2)):\(zeroPadded(secs, 2))" }
        return "\(minutes):\(zeroPadded(secs, 2))"
    }

    /// A wall-clock time in `timeZone`, as near as it is: `today 07:00`, `tomorrow 07:00`, `Wed 07:00`,
    /// or `2026-12-24 18:00` beyond a week (seconds shown when not zero).
    public static func wallClock(_ date: Date, now: Date, timeZone: TimeZone) -> String {
        let day = ScheduleMath.localDay(of: date, in: timeZone)
        let days = day.daysSinceEpoch - ScheduleMath.localDay(of: now, in: timeZone).daysSinceEpoch
        let time = ScheduleMath.timeOfDayText(of: date, in: timeZone)
        switch days {
        case 0: return "today \(time)"
        case 1: return "tomorrow \(time)"
        case 2..<7: return "\(LocalDay.weekdayAbbreviations[day.weekdayIndex]) \(time)"
        default: return "\(day) \(time)"
        }
    }

    /// The schedule as `alarmctl alarm` takes it: `07:00 mon,wed,fri`, `2026-12-24 18:00 CET`, `-` for a timer.
    public static func schedule(of document: AlarmDocument, timeZone: TimeZone) -> String {
        switch document.configuration.schedule {
        case nil: return "-"
        case .fixed(let date)?: return "\(ScheduleMath.localText(of: date, in: timeZone)) (\(AlarmJSON.string(from: date)))"
        case .relative(let relative)?: return "\(TimeOfDay.format(relative.time)) \(WeekdayList.describe(relative.repeats))"
        }
    }
}
