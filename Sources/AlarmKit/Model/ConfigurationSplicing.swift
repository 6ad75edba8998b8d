import FoundationEssentials
import Synchronization

/// Encodes alarm documents and records to exactly the bytes `AlarmJSON.encoder` writes, but
/// encodes an alarm's configuration only when it changes.
///
/// A configuration (title, buttons, colours, schedule, intents) is most of an alarm's JSON and
/// changes only when the alarm is scheduled again, while its state changes with every pause,
/// resume or alert. This encoder keeps each alarm's encoded configuration and splices it into
/// the rest, written by `CompactJSON`: `AlarmJSON.encoder` sorts keys by their UTF-8 bytes, so
/// merging two key-sorted member lists gives the same object.
///
/// The cache holds one configuration per alarm id (about 0.5 KB); ``forget(_:)`` drops one.
public final class SplicingAlarmEncoder: Sendable {
    private struct Configuration {
        let value: AlarmManager.AlarmConfiguration<JSONValue>
        /// The configuration alone, as a compact key-sorted object.
        let bytes: [UInt8]
        /// Its members, as ranges of `bytes`.
        let members: [Range<Int>]
    }

    private let configurations = Mutex<[UUID: Configuration]>([:])

    public init() {}

    /// `document` as `AlarmJSON.encoder` writes it.
    ///
    /// - Parameter remembering: false for a document that may be of an alarm removed meanwhile (a
    ///   reply's): its configuration is then used if kept, but not kept if it was not.
    public func encode(_ document: AlarmDocument, remembering: Bool = true) throws -> [UInt8] {
        let configuration = try cachedConfiguration(document.configuration, of: document.id, remembering: remembering)
        return document.objectOmittingConfiguration.merged(with: configuration.bytes, members: configuration.members)
    }

    /// `record` as `AlarmJSON.encoder` writes it (its configuration nested under `configuration`).
    public func encode(_ record: AlarmRecord) throws -> [UInt8] {
        let configuration = try cachedConfiguration(record.configuration, of: record.id)
        var object = record.objectOmittingConfiguration
        object.set("configuration", json: configuration.bytes)
        return object.bytes
    }

    /// Forgets alarm `id`'s configuration (the alarm was removed).
    public func forget(_ id: UUID) {
        _ = configurations.withLock { $0.removeValue(forKey: id) }
    }

    /// Keeps only the configurations of `ids`.
    public func keepOnly(_ ids: Set<UUID>) {
        configurations.withLock { cache in cache = cache.filter { ids.contains($0.key) } }
    }

    /// How many configurations are kept.
    public var cachedCount: Int {
        configurations.withLock { $0.count }
    }

    private func cachedConfiguration(
        _ value: AlarmManager.AlarmConfiguration<JSONValue>, of id: UUID, remembering: Bool = true
    ) throws -> Configuration {
        if let cached = configurations.withLock({ $0[id] }), cached.value == value { return cached }
        let bytes = Array(try AlarmJSON.encoder.encode(value))
        let configuration = Configuration(value: value, bytes: bytes, members: JSONObjectMembers.split(bytes))
        if remembering { configurations.withLock { $0[id] = configuration } }
        return configuration
    }
}

/// The top-level members of a compact JSON object, as `JSONEncoder` writes one: `{"a":1,"b":[2]}`.
enum JSONObjectMembers {
    /// The byte ranges of each `"key":value` member of `object`, in order.
    static func split(_ object: [UInt8]) -> [Range<Int>] {
        var members: [Range<Int>] = []
        var depth = 0, inString = false, escaped = false
        var start = 1
        for index in object.indices {
            let byte = object[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0, index > start { members.append(start..<index) }
            case UInt8(ascii: ","):
                if depth == 1 {
                    members.append(start..<index)
                    start = index + 1
                }
            default: break
            }
        }
        return members
    }

    /// The key of the member at `range`: the bytes between its first two quotes.
    static func key(_ bytes: [UInt8], _ range: Range<Int>) -> ArraySlice<UInt8> {
        let keyStart = range.lowerBound + 1
        let keyEnd = bytes[keyStart..<range.upperBound].firstIndex(of: UInt8(ascii: "\"")) ?? range.upperBound
        return bytes[keyStart..<keyEnd]
    }
}
