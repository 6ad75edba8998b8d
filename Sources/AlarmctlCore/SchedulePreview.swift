import AlarmKit
import Foundation

/// `alarmctl preview`: the next alert dates of a schedule, computed by the daemon's `ScheduleMath`.
public enum SchedulePreview {
    /// The most dates one preview lists.
    public static let maximumCount = 1000

    /// The zone named by `identifier` (IANA, e.g. Europe/Berlin), or this machine's when nil.
    public static func timeZone(_ identifier: String?) throws(AlarmctlError) -> TimeZone {
        guard let identifier else { return .current }
        guard let zone = namedTimeZone(identifier) else {
            throw .usage("--time-zone '\(identifier)' is not an IANA time zone: use a name such as \(yearRoundOffsets[identifier] ?? "Europe/Berlin or America/New_York") (for a fixed offset, Etc/GMT-2 is 2 hours east)")
        }
        return zone
    }

    /// The instant `--from` names: ISO 8601 with an offset, or a local date and time in `timeZone`.
    public static func start(_ text: String, in timeZone: TimeZone) throws(AlarmctlError) -> Date {
        if let date = AlarmJSON.date(from: text) { return date }
        if let local = LocalDateTime(parsing: text) { return local.date(in: timeZone) }
        throw .usage("--from '\(text)' is not an ISO 8601 time: write 2026-11-22T07:00:00Z, 2026-11-22T08:00+01:00, "
            + "or 2026-11-22T08:00 (in the preview's time zone)")
    }

    /// The next `count` alert dates of `expression` strictly after `start`, in `timeZone`.
    public static func dates(
        of expression: ScheduleExpression, after start: Date, count: Int, in timeZone: TimeZone
    ) throws(AlarmctlError) -> [Date] {
        guard (1...maximumCount).contains(count) else {
            throw .usage("--count \(count) is out of range: list 1 to \(maximumCount) dates")
        }
        return ScheduleMath.upcomingAlertDates(of: expression.schedule(in: timeZone), after: start, count: count, in: timeZone)
    }
}
