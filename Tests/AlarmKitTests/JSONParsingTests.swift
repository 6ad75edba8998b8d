import Foundation
import Testing
@testable import AlarmKit

/// `JSONValue(parsing:)` against `JSONDecoder`, which the command decoder used before: the
/// same values from the same text, and the same texts refused.
@Suite("JSON parsing")
struct JSONParsingTests {
    /// What `JSONDecoder` makes of `text` through `JSONValue`'s `Codable` conformance.
    static func decoded(_ text: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text))
    }

    static func parsed(_ text: [UInt8]) -> JSONValue? {
        try? JSONValue(parsing: text)
    }

    /// `JSONDecoder` also reads UTF-16 and UTF-32, which it recognises by a byte order mark or
    /// by zero bytes among the first four; the parser reads UTF-8 only.
    static func mayBeReadAsWideText(_ text: [UInt8]) -> Bool {
        text.prefix(4).contains(0) || text.starts(with: [0xFE, 0xFF]) || text.starts(with: [0xFF, 0xFE])
    }

    @Test("Values", arguments: [
        (#"{"a":[1,-2.5e3,true,false,null,"x"],"b":{}}"#,
         JSONValue.object(["a": .array([.number(1), .number(-2500), .bool(true), .bool(false), .null, .string("x")]), "b": .object([:])])),
        (" \t\r\n[ ] ", .array([])),
        ("\u{FEFF}{}", .object([:])),
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{08}\u{0C}\n\r\t")),
        (#""\u00e9\u20AC\ud83d\ude00 é€😀""#, .string("é€😀 é€😀")),
        (#"{"a":1,"a":2}"#, .object(["a": .number(1)])),
        ("-0", .number(-0.0)),
        ("0e-400", .number(0)),
        ("5e-324", .number(5e-324)),
        ("0.1e-2", .number(0.001)),
        ("123456789012345678901234567890", .number(123456789012345678901234567890)),
        ("1E+2", .number(100)),
        ("[1,]", .array([.number(1)])),
        (#"{"a":1 , }"#, .object(["a": .number(1)])),
    ])
    func values(text: String, expected: JSONValue) throws {
        #expect(try JSONValue(parsing: Array(text.utf8)) == expected)
        #expect(Self.decoded(Array(text.utf8)) == expected)
    }

    @Test("Refusals", arguments: [
        "", " ", "{", "[,]", "{,}", "[1,,]", "[1,,2]", "{a:1}", "01", "-", "1.", ".5", "+1", "1e", "1e+", "0x10", "1e400", "-1e400",
        "1e-400", "-2e-324", "0.1e-999", "tru", "nul", "True", "NaN", "Infinity", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "\"a\u{01}b\"", "[1] [2]", "{} x", "'a'", "[1 2]", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
    ])
    func refusals(text: String) {
        #expect(Self.parsed(Array(text.utf8)) == nil)
        #expect(Self.decoded(Array(text.utf8)) == nil)
    }

    @Test("Zero written with an exponent is zero; an underflow is refused")
    func zeroAndUnderflow() {
        // JSONDecoder refuses some of these ("0e5", "0.000e5") and not others ("0.0e5"): its
        // check for an underflow looks at the digits unevenly. A zero significand is zero here.
        for text in ["0e5", "0.0e5", "0.000e5", "-0.0e1", "0E+9"] {
            #expect(Self.parsed(Array(text.utf8)) == .number(0), "\(text)")
        }
        for text in ["1e-400", "10e-400", "0.0001e-400"] {
            #expect(Self.parsed(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test("Negative zero keeps its sign")
    func negativeZero() throws {
        guard case .number(let value) = try JSONValue(parsing: Array("-0.0".utf8)) else {
            Issue.record("not a number")
            return
        }
        #expect(value.sign == .minus && value == 0)
    }

    @Test("A malformed value under a repeated name is refused, though JSONDecoder skips it")
    func repeatedNameWithMalformedValue() {
        for text in [#"{"a":1,"a":"\q"}"#, #"{"a":1,"a":1e400}"#] {
            #expect(Self.parsed(Array(text.utf8)) == nil)
            #expect(Self.decoded(Array(text.utf8)) == .object(["a": .number(1)]))
        }
    }

    @Test("Invalid UTF-8 is refused, inside and outside strings")
    func invalidUTF8() {
        for text: [UInt8] in [[0x22, 0xC3, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x5B, 0xC3, 0xA9, 0x5D]] {
            #expect(Self.parsed(text) == nil)
            #expect(Self.decoded(text) == nil)
        }
    }

    @Test("Nesting up to the limit is read; one level more is refused", .offTheCooperativePool)
    func nesting() throws {
        let limit = JSONValue.maximumNestingDepth
        let deepest = Array((String(repeating: "[", count: limit) + String(repeating: "]", count: limit)).utf8)
        let tooDeep = Array((String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)).utf8)
        #expect(Self.parsed(deepest) != nil)
        #expect(Self.decoded(deepest) != nil)
        #expect(Self.parsed(tooDeep) == nil)
        #expect(Self.decoded(tooDeep) == nil)
        // Far deeper than any stack could recurse: refused, not a crash.
        #expect(Self.parsed(Array(repeating: UInt8(ascii: "["), count: 1_000_000)) == nil)
    }

    @Test("Mutated commands and random bytes: the same outcome as JSONDecoder", .offTheCooperativePool)
    func agreesWithJSONDecoder() {
        var generator = SplitMix64(seed: 0x15_0_4)
        var compared = 0, refused = 0
        for round in 0..<20_000 {
            let text: [UInt8] = round % 10 == 0
                ? (0..<Int(generator.next() % 32)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                : CommandFuzzTests.mutate(CommandFuzzTests.valid, &generator)
            guard !Self.mayBeReadAsWideText(text) else { continue }
            let parsed = Self.parsed(text)
            #expect(parsed == Self.decoded(text), "\(String(decoding: text, as: UTF8.self))")
            compared += 1
            if parsed == nil { refused += 1 }
        }
        #expect(compared > 19_000)
        // Both outcomes occur: the comparison covers acceptance and refusal.
        #expect(refused > compared / 10 && compared - refused > compared / 50, "\(refused) of \(compared) refused")
    }
}
