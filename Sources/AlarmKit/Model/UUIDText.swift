import FoundationEssentials

/// UUIDs as text, written and read in Swift. Foundation's `uuidString` and
/// `UUID(uuidString:)` go through the C library's `snprintf` and `sscanf` (in a profile of
/// the rate phase, 3 % of alarmd's CPU), and a change writes an alarm's id several times: its
/// topic, its document, its event, its journal line.
enum UUIDText {
    /// The upper-case hexadecimal digit of `value` (0...15).
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// The byte indices after which the canonical form has a hyphen.
    private static func hasHyphen(after index: Int) -> Bool { index == 3 || index == 5 || index == 7 || index == 9 }

    /// The canonical form, as `uuidString` writes it: 36 characters, upper-case hexadecimal,
    /// hyphens after the 4th, 6th, 8th and 10th bytes.
    static func string(_ id: UUID) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            write(id, into: buffer)
        }
    }

    /// Appends the canonical form's bytes.
    static func append(_ id: UUID, to bytes: inout [UInt8]) {
        CompactJSON.append(count: 36, to: &bytes) { _ = write(id, into: $0) }
    }

    private static func write(_ id: UUID, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var position = 0
        withUnsafeBytes(of: id.uuid) { bytes in
            for (index, byte) in bytes.enumerated() {
                buffer[position] = hexDigit(byte >> 4)
                buffer[position + 1] = hexDigit(byte & 0x0F)
                position += 2
                if hasHyphen(after: index) {
                    buffer[position] = UInt8(ascii: "-")
                    position += 1
                }
            }
        }
        return position
    }

    /// Reads the canonical form, in upper- or lower-case hexadecimal; nil for anything else
    /// (another length, a hyphen elsewhere, braces, spaces).
    static func uuid(_ text: some StringProtocol) -> UUID? {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &bytes) { output -> Bool in
            var index = 0
            var high: UInt8?
            for (position, character) in utf8.enumerated() {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard let value = hexValue(character) else { return false }
                if let first = high {
                    output[index] = first << 4 | value
                    index += 1
                    high = nil
                } else {
                    high = value
                }
            }
            return index == 16
        }
        return parsed ? UUID(uuid: bytes) : nil
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
