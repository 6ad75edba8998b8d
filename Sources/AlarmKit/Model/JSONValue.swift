import FoundationEssentials

/// Any JSON value. Used for alarm metadata on the node, which does not know the app's
/// `Metadata` type, and wherever a document holds free-form JSON.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Converts any `Encodable` value (an app's metadata) into a `JSONValue`.
    public init(encoding value: some Encodable) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    /// Decodes an app's `Decodable` type (its metadata) from this value.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(self))
    }

    /// The member `key` of an object; nil for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? { if case .object(let object) = self { object[key] } else { nil } }

    /// The text of a string; nil for any other value.
    public var string: String? { if case .string(let text) = self { text } else { nil } }

    /// The size of this value written as compact JSON, in bytes.
    public var encodedByteCount: Int { (try? AlarmJSON.encoder.encode(self).count) ?? 0 }
}

/// Metadata on the node is kept as raw JSON: it conforms so that
/// `AlarmManager.AlarmConfiguration<JSONValue>` is the type-erased configuration.
extension JSONValue: AlarmMetadata {}
