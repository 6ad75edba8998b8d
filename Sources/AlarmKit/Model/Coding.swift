import FoundationEssentials

/// The one JSON encoding of docs/mqtt.md, shared by the state file, MQTT and alarmctl.
public enum AlarmJSON {
    /// Compact, key-sorted encoder. Dates need no strategy: the model's types write their
    /// dates themselves as ISO 8601 UTC with milliseconds.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for trusted documents (retained state, the state file): unknown fields are ignored.
    public static var decoder: JSONDecoder { JSONDecoder() }

    /// A decoder for commands: unknown fields in the configuration are errors.
    public static var strictDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.userInfo[.alarmStrictDecoding] = true
        return decoder
    }

    /// Encodes `value` with ``encoder``, as the bytes of an MQTT payload or a file.
    public static func encode(_ value: some Encodable) throws -> [UInt8] { Array(try encoder.encode(value)) }

    /// Writes an instant as docs/mqtt.md says: UTC with milliseconds, e.g. `2026-11-22T07:00:00.000Z`,
    /// rounded to the nearest millisecond.
    ///
    /// The milliseconds are written from whole numbers: the format style truncates, so `10.412`,
    /// held in binary as `10.41199…`, came back as `10.411` (libFuzzer found a fixed date of
    /// `….002Z` that changed by 1 ms in its own document and state file, and then one in the year
    /// 7962, where a double has no sub-microsecond room to nudge the time past the shortfall).
    public static func string(from date: Date) -> String {
        guard var milliseconds = Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded()) else {
            return date.formatted(instantStyle)
        }
        var seconds = milliseconds / 1000
        milliseconds %= 1000
        if milliseconds < 0 { (seconds, milliseconds) = (seconds - 1, milliseconds + 1000) }
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(wholeSecondStyle)
        let fraction = String(milliseconds)
        return "\(whole.dropLast()).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)Z"
    }

    /// Reads an ISO 8601 instant with any offset, with or without fractional seconds, rounded to
    /// the millisecond (what ``string(from:)`` writes), so that what is read is written back unchanged.
    public static func date(from string: String) -> Date? {
        (try? instantStyle.parse(string)).map { Date(timeIntervalSince1970: ($0.timeIntervalSince1970 * 1000).rounded() / 1000) }
    }

    private static let instantStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let wholeSecondStyle = Date.ISO8601FormatStyle()
}

extension CodingUserInfoKey {
    /// Set to `true` to make a configuration reject the fields it does not know.
    public static let alarmStrictDecoding = CodingUserInfoKey(rawValue: "alarmkit.strictDecoding")!
}

/// A coding key made from any string: a command's fields, an unknown field's path.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// The string this decoder holds, read by `parse`; a string `parse` refuses (nil) is a
    /// ``dataCorrupted(_:)`` error saying `problem(string)`.
    func decodeString<Value>(_ parse: (String) -> Value?, problem: (String) -> String) throws -> Value {
        let text = try singleValueContainer().decode(String.self)
        guard let value = parse(text) else { throw dataCorrupted(problem(text)) }
        return value
    }

    /// A `dataCorrupted` error at this decoder's path.
    func dataCorrupted(_ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: description))
    }

    /// In strict mode, fails on the first field read here that `decoded` does not write back, with
    /// the field's path. The model's types write every field they know (`null` for an absent
    /// one), so a field they do not write is one they do not know.
    func rejectUnknownFields(notWrittenBy decoded: some Encodable) throws {
        guard userInfo[.alarmStrictDecoding] as? Bool == true,
              let path = try JSONValue(from: self).firstField(missingFrom: JSONValue(encoding: decoded)) else { return }
        throw DecodingError.dataCorrupted(.init(
            codingPath: codingPath + path.map(AnyCodingKey.init(stringValue:)),
            debugDescription: "unknown field '\(path.last!)'"))
    }
}

extension JSONValue {
    /// The path of the first member (by sorted keys, depth first) of an object in this value
    /// that `other` does not have at the same place. Arrays are not searched: the model's
    /// arrays hold no objects of its own.
    fileprivate func firstField(missingFrom other: JSONValue) -> [String]? {
        guard case .object(let members) = self, case .object(let others) = other else { return nil }
        for key in members.keys.sorted() {
            guard let written = others[key] else { return [key] }
            if let path = members[key]!.firstField(missingFrom: written) { return [key] + path }
        }
        return nil
    }
}

/// A `Date?` that synthesized `Codable` reads and writes as ``AlarmJSON`` writes an instant, and
/// leaves out when it is `nil` (see the `encode` and `decode` overloads below).
@propertyWrapper
public struct OptionalInstant: Codable, Hashable, Sendable {
    public var wrappedValue: Date?

    public init(wrappedValue: Date?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        wrappedValue = try decoder.decodeString(AlarmJSON.date(from:), problem: Self.notAnInstant)
    }

    public func encode(to encoder: any Encoder) throws { try wrappedValue.map(AlarmJSON.string(from:)).encode(to: encoder) }

    static func notAnInstant(_ text: String) -> String { "'\(text)' is not an ISO 8601 time such as 2026-11-22T07:00:00Z" }
}

extension KeyedDecodingContainer {
    /// Decodes an ISO 8601 instant written as a string.
    package func decodeDate(forKey key: Key) throws -> Date {
        let text = try decode(String.self, forKey: key)
        guard let date = AlarmJSON.date(from: text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: OptionalInstant.notAnInstant(text))
        }
        return date
    }

    /// An absent or `null` field is a `nil` instant.
    func decode(_ type: OptionalInstant.Type, forKey key: Key) throws -> OptionalInstant {
        try decodeIfPresent(type, forKey: key) ?? OptionalInstant(wrappedValue: nil)
    }

    /// An absent or `null` field is a `nil` value.
    func decode<Value: Decodable>(_ type: ExplicitNull<Value>.Type, forKey key: Key) throws -> ExplicitNull<Value> {
        ExplicitNull(wrappedValue: try decodeOptional(Value.self, forKey: key))
    }

    /// `decodeIfPresent` that also treats an explicit `null` as absent.
    func decodeOptional<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try decode(type, forKey: key)
    }
}

/// An optional property that synthesized `Encodable` writes as an explicit `null` when it is
/// `nil`, rather than leaving it out: the documents of docs/mqtt.md show every field.
@propertyWrapper
public struct ExplicitNull<Value: Encodable>: Encodable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws { try wrappedValue.encode(to: encoder) }
}

extension ExplicitNull: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws { wrappedValue = try Optional<Value>(from: decoder) }
}

// The wrappers print as their value: `print(alarm)` reads `_preAlert: 300.0`, not the wrapper's insides.
extension ExplicitNull: CustomDebugStringConvertible {
    public var debugDescription: String { wrappedValue.map { String(reflecting: $0) } ?? "nil" }
}
extension OptionalInstant: CustomDebugStringConvertible {
    public var debugDescription: String { wrappedValue.map { String(reflecting: $0) } ?? "nil" }
}
extension InstantOrNull: CustomDebugStringConvertible {
    public var debugDescription: String { wrappedValue.map { String(reflecting: $0) } ?? "nil" }
}

extension ExplicitNull: Equatable where Value: Equatable {}
extension ExplicitNull: Hashable where Value: Hashable {}
extension ExplicitNull: Sendable where Value: Sendable {}

/// A `Date?` that synthesized `Encodable` writes as ``AlarmJSON`` writes an instant, or as `null`.
@propertyWrapper
public struct InstantOrNull: Encodable, Hashable, Sendable {
    public var wrappedValue: Date?

    public init(wrappedValue: Date?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        try ExplicitNull(wrappedValue: wrappedValue.map(AlarmJSON.string(from:))).encode(to: encoder)
    }
}

extension KeyedEncodingContainer {
    /// Writes the value, or `null`, as a member of this container. Synthesized `Encodable` picks
    /// this over the wrapper's own `encode(to:)`: the same bytes, without a nested encoder for
    /// each member.
    package mutating func encode<Value>(_ value: ExplicitNull<Value>, forKey key: Key) throws {
        try encodeOrNull(value.wrappedValue, forKey: key)
    }

    /// Writes the instant, or `null`, as a member of this container (see the overload above).
    package mutating func encode(_ value: InstantOrNull, forKey key: Key) throws {
        try encodeOrNull(value.wrappedValue.map(AlarmJSON.string(from:)), forKey: key)
    }

    /// Leaves out a `nil` instant.
    mutating func encode(_ value: OptionalInstant, forKey key: Key) throws {
        try encodeIfPresent(value.wrappedValue.map(AlarmJSON.string(from:)), forKey: key)
    }

    /// Writes an ISO 8601 instant, or `null`.
    package mutating func encodeDate(_ date: Date?, forKey key: Key) throws {
        try encode(InstantOrNull(wrappedValue: date), forKey: key)
    }

    /// Writes a value, or an explicit `null`: the documents of docs/mqtt.md show every field.
    mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
