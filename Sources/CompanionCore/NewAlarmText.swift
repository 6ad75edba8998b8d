import AlarmKit
import Foundation

/// A new timer or alarm typed in the command line's human syntax.
enum NewAlarmText {
    static func configuration(_ text: String, timeZone: TimeZone, now: Date) throws(CompanionError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        throw CompanionError(code: "notAvailable", status: .notImplemented, message: "new alarms from the page are not available yet")
    }
}
