import AlarmKit
import Foundation

/// A new timer or alarm typed in the command line's human syntax, in one line (`10m Tea`,
/// `07:00 weekdays Work`, `2026-12-24T18:00 Eve`), read with AlarmKit's ``RequestLine``.
public enum NewAlarmText {
    /// The configuration `text` asks for; a time of day or a date without offset is the node's,
    /// in `timeZone`. A line that cannot be read is a bad request, with the forms it takes.
    public static func configuration(_ text: String, timeZone: TimeZone) throws(CompanionError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        do {
            return try RequestLine(parsing: text).configuration(in: timeZone)
        } catch {
            throw CompanionError(code: error.code, status: error.code == "unreadable" ? .badRequest : .unprocessableContent,
                                 message: error.message)
        }
    }
}
