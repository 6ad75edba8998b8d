import FoundationEssentials

/// Instants as SPEC §5 writes them, `2026-11-22T07:00:00.000Z` (UTC, milliseconds truncated),
/// computed in Swift. Foundation's `ISO8601FormatStyle` goes through its Gregorian calendar's
/// date components for every instant (in a profile of the rate phase, 1.7 % of alarmd's CPU),
/// and a change writes several: its document's, its event's, its journal line's.
///
/// Instants from 1970 to 9999 are written here; any other is left to Foundation, whose output
/// stays the reference (`InstantTextTests` compares the two).
enum InstantText {
    /// The length of every instant written here.
    private static let length = 24

    /// The instant as text.
    static func string(_ date: Date) -> String {
        guard let fields = Fields(date) else { return date.formatted(foundationStyle) }
        return String(unsafeUninitializedCapacity: length) { fields.write(into: $0) }
    }

    /// Appends the instant's bytes (without quotes).
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        guard let fields = Fields(date) else { return bytes += date.formatted(foundationStyle).utf8 }
        CompactJSON.append(count: length, to: &bytes) { _ = fields.write(into: $0) }
    }

    /// The reference, and the writer of instants outside 1970...9999.
    static let foundationStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A civil date and time in UTC.
    private struct Fields {
        var year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, millisecond = 0

        /// Nil outside 1970-01-01 ... 9999-12-31 (or for NaN).
        init?(_ date: Date) {
            // From the interval a `Date` holds, as Foundation's calendar does: the interval since
            // 1970 is another double, rounded differently (a parsed ".001" is 0.000999… there).
            let sinceReference = date.timeIntervalSinceReferenceDate
            guard sinceReference >= -Date.timeIntervalBetween1970AndReferenceDate,
                  sinceReference < 253_402_300_800 - Date.timeIntervalBetween1970AndReferenceDate else { return nil }
            let whole = sinceReference.rounded(.down)
            // Truncated to nanoseconds, then to milliseconds, as Foundation does.
            millisecond = Int(((sinceReference - whole) * 1e9).rounded(.down)) / 1_000_000
            let seconds = Int(whole) + Int(Date.timeIntervalBetween1970AndReferenceDate)
            let days = seconds / 86_400, secondOfDay = seconds % 86_400
            hour = secondOfDay / 3600
            minute = secondOfDay / 60 % 60
            second = secondOfDay % 60
            // Days since 1970-01-01 to a proleptic Gregorian date, in eras of 400 years that
            // start on 1 March (Howard Hinnant's `civil_from_days`).
            let shifted = days + 719_468
            let era = shifted / 146_097
            let dayOfEra = shifted - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let monthFromMarch = (5 * dayOfYear + 2) / 153
            day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
            month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
            year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        }

        /// Writes the 24 bytes; returns their count.
        func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
            var position = 0
            func digits(_ value: Int, _ count: Int) {
                var value = value
                for offset in stride(from: count - 1, through: 0, by: -1) {
                    buffer[position + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                position += count
            }
            func character(_ ascii: Unicode.Scalar) {
                buffer[position] = UInt8(ascii: ascii)
                position += 1
            }
            digits(year, 4); character("-"); digits(month, 2); character("-"); digits(day, 2)
            character("T"); digits(hour, 2); character(":"); digits(minute, 2); character(":"); digits(second, 2)
            character("."); digits(millisecond, 3); character("Z")
            return position
        }
    }
}
