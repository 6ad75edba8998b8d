/// Reading JSON text straight into a ``JSONValue``.
///
/// `JSONDecoder` reaches a `JSONValue` through `Codable`, which has no way to ask what kind of
/// value comes next: every object costs four failed decodes (bool, number, string, array), each
/// building a `DecodingError`. This parser reads a command's payload in about a third of that
/// time (the bench's section 8). It accepts what `JSONDecoder` accepts from UTF-8 text (which
/// includes a trailing comma after the last member or element) and gives the same values; a
/// test compares the two on mutated payloads. Two differences: `JSONDecoder` checks a value's
/// contents only when it decodes it, so of a repeated member name it checks the first value
/// only, where this parser refuses a malformed value wherever it stands; and `JSONDecoder`
/// refuses some zeros written with an exponent (`0e5`, not `0.0e5`), which read as zero here.
extension JSONValue {
    /// How deeply arrays and objects may nest: `JSONDecoder`'s limit, and a bound on recursion.
    public static let maximumNestingDepth = 512

    /// Why a text is not JSON, and where (a byte offset).
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        public let offset: Int
        public let reason: String

        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses UTF-8 JSON text (RFC 8259; a UTF-8 byte order mark is skipped): one value,
    /// surrounded by optional white space.
    ///
    /// - Throws: ``SyntaxError`` for anything else: invalid UTF-8, a control character or an
    ///   unpaired surrogate escape in a string, a number out of `Double`'s range (too large, or so
    ///   small that it would read as zero), nesting deeper
    ///   than ``maximumNestingDepth``, trailing text.
    public init(parsing text: [UInt8]) throws(SyntaxError) {
        self = try text.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var parser = JSONParser(buffer)
            return try parser.parseDocument()
        }
    }
}

/// A recursive-descent reader over one buffer; `index` is the next byte to read.
private struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(JSONValue.SyntaxError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhiteSpace()
        let value = try parseValue()
        skipWhiteSpace()
        guard index == bytes.count else { throw error("unexpected text after the JSON value") }
        return value
    }

    private func error(_ reason: String) -> JSONValue.SyntaxError {
        JSONValue.SyntaxError(offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhiteSpace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func parseValue() throws(JSONValue.SyntaxError) -> JSONValue {
        guard let byte = current else { throw error("the text ends where a value should be") }
        switch byte {
        case UInt8(ascii: "{"): return try parseContainer(closing: UInt8(ascii: "}"))
        case UInt8(ascii: "["): return try parseContainer(closing: UInt8(ascii: "]"))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character where a value should be")
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(JSONValue.SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
              UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[index..<index + count]) else {
            throw error("expected \(word)")
        }
        index += count
    }

    /// An object (`closing` is `}`) or an array (`]`), from its opening bracket.
    private mutating func parseContainer(closing: UInt8) throws(JSONValue.SyntaxError) -> JSONValue {
        guard depth < JSONValue.maximumNestingDepth else { throw error("nested too deeply") }
        depth += 1
        defer { depth -= 1 }
        let isObject = closing == UInt8(ascii: "}")
        var members: [String: JSONValue] = [:]
        var elements: [JSONValue] = []
        index += 1
        skipWhiteSpace()
        if current == closing {
            index += 1
            return isObject ? .object(members) : .array(elements)
        }
        while true {
            if isObject {
                guard current == UInt8(ascii: "\"") else { throw error("expected a member name in quotes") }
                let key = try parseString()
                skipWhiteSpace()
                guard current == UInt8(ascii: ":") else { throw error("expected ':' after a member name") }
                index += 1
                skipWhiteSpace()
                let value = try parseValue()
                // JSONDecoder keeps the first of repeated names.
                if members[key] == nil { members[key] = value }
            } else {
                elements.append(try parseValue())
            }
            skipWhiteSpace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhiteSpace()
                // Like JSONDecoder, a comma may end the last member or element.
                if current == closing {
                    index += 1
                    return isObject ? .object(members) : .array(elements)
                }
            case closing:
                index += 1
                return isObject ? .object(members) : .array(elements)
            default:
                throw error(isObject ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array")
            }
        }
    }

    /// A string, from its opening quote.
    private mutating func parseString() throws(JSONValue.SyntaxError) -> String {
        index += 1
        let start = index
        // The common case: no escapes, so the string is the bytes between the quotes.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw error("a control character in a string must be escaped") }
            index += 1
        }
        guard current != nil else { throw error("a string is not closed") }
        var utf8 = Array(bytes[start..<index])
        while current == UInt8(ascii: "\\") {
            index += 1
            try appendEscape(to: &utf8)
            while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                guard byte >= 0x20 else { throw error("a control character in a string must be escaped") }
                utf8.append(byte)
                index += 1
            }
            guard current != nil else { throw error("a string is not closed") }
        }
        index += 1
        guard let string = String(validating: utf8, as: UTF8.self) else { throw error("a string is not valid UTF-8") }
        return string
    }

    /// The character an escape stands for, from the byte after the backslash.
    private mutating func appendEscape(to utf8: inout [UInt8]) throws(JSONValue.SyntaxError) {
        guard let byte = current else { throw error("a string is not closed") }
        index += 1
        let simple: UInt8? = switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): byte
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            utf8.append(simple)
            return
        }
        guard byte == UInt8(ascii: "u") else { throw error("unknown escape in a string") }
        var scalar = UInt32(try parseHexQuad())
        if (0xD800...0xDBFF).contains(scalar) {
            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("an escaped high surrogate is not followed by a low one")
            }
            index += 2
            let low = UInt32(try parseHexQuad())
            guard (0xDC00...0xDFFF).contains(low) else { throw error("an escaped high surrogate is not followed by a low one") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw error("an escaped low surrogate has no high one before it")
        }
        utf8.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
    }

    private mutating func parseHexQuad() throws(JSONValue.SyntaxError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hexadecimal digits") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8 = switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: throw error("a \\u escape needs four hexadecimal digits")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// A number by RFC 8259's grammar, read as the nearest `Double`.
    private mutating func parseNumber() throws(JSONValue.SyntaxError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard skipDigits() > 0 else { throw error("a number needs digits") }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() > 0 else { throw error("a number needs digits after its decimal point") }
        }
        var exponentStart: Int?
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            exponentStart = index
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw error("a number needs digits in its exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        // `Double` reads an underflow as zero; JSONDecoder refuses it, as a value it cannot hold.
        let writesZero = !bytes[start..<(exponentStart ?? index)].contains { (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0) }
        guard let value = Double(text), value.isFinite, value != 0 || writesZero else {
            index = start
            throw error("the number \(text) is out of range")
        }
        return value
    }

    /// Skips decimal digits; returns how many.
    private mutating func skipDigits() -> Int {
        let start = index
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }
}
