import FoundationEssentials

/// Writes JSON exactly as `AlarmJSON.encoder` does (compact, object keys sorted by their UTF-8
/// bytes, slashes unescaped, a number as its shortest `description` without a trailing `.0`),
/// without Codable: for what the node writes after every change (a document, a state-file record,
/// an event), where `JSONEncoder` was the largest part of a change's CPU in a profile.
///
/// The Codable conformances stay the reference: `CompactJSONTests` compares this writer's bytes
/// with `AlarmJSON.encoder`'s for every value it writes.
enum CompactJSON {
    /// Appends `value`.
    static func append(_ value: JSONValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: bytes += "null".utf8
        case .bool(let flag): bytes += (flag ? "true" : "false").utf8
        case .number(let number): append(number: number, to: &bytes)
        case .string(let text): append(string: text, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                append(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            // Keys are unique already: written in order without an Object's bookkeeping.
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: Object.precedes).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                append(string: key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                append(members[key] ?? .null, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `number` as `JSONEncoder` writes a `Double`: its `description`, less a trailing `.0`.
    /// JSON has no NaN or infinity (`JSONEncoder` throws on them): they are written as `null`, so
    /// that a document or event still goes out. Nothing in the model produces them.
    static func append(number: Double, to bytes: inout [UInt8]) {
        guard number.isFinite else { return bytes += "null".utf8 }
        let text = number.description
        bytes += text.hasSuffix(".0") ? text.utf8.dropLast(2) : text.utf8[...]
    }

    /// Appends `text` quoted, escaping `"`, `\` and the control characters as `JSONEncoder` does.
    static func append(string text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings (keys, ids, dates, titles) need no escape: copied whole.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            bytes += text.utf8
            return bytes.append(UInt8(ascii: "\""))
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += #"\""#.utf8
            case UInt8(ascii: "\\"): bytes += #"\\"#.utf8
            case 0x08: bytes += #"\b"#.utf8
            case 0x0C: bytes += #"\f"#.utf8
            case UInt8(ascii: "\n"): bytes += #"\n"#.utf8
            case UInt8(ascii: "\r"): bytes += #"\r"#.utf8
            case UInt8(ascii: "\t"): bytes += #"\t"#.utf8
            case ..<0x20:
                bytes += #"\u00"#.utf8
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `count` bytes that `write` fills in place (text of a fixed width: an id, an instant).
    static func append(count: Int, to bytes: inout [UInt8], _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: count))
        bytes.withUnsafeMutableBufferPointer { buffer in write(UnsafeMutableBufferPointer(rebasing: buffer[start...])) }
    }

    /// An object under construction: members set in any order, written sorted by key; setting a
    /// key again replaces its value, as a keyed encoding container does.
    ///
    /// Each member is written once, `"key":value`, into one buffer as it is set, and only its
    /// key and range are kept (in key order): writing the object, or merging it with another
    /// object's members, copies ranges. Objects here have a handful of members, so the ranges are
    /// a short array searched in place (a buffer per member, then a dictionary, each showed in a
    /// profile of the rate phase).
    struct Object {
        /// The members as set, one after another, without separators; a replaced one stays unused.
        private var buffer: [UInt8] = []
        /// Each member's key and where it is in `buffer`, sorted by key.
        private var members: [(key: String, range: Range<Int>)] = []

        init() {
            buffer.reserveCapacity(256)
        }

        /// The order of keys in a written object: by their UTF-8 bytes.
        static func precedes(_ first: String, _ second: String) -> Bool {
            first.utf8.lexicographicallyPrecedes(second.utf8)
        }

        /// Writes `key` and, with `writeValue`, its value at the end of the buffer, and files the
        /// member under its key.
        private mutating func put(_ key: String, _ writeValue: (inout [UInt8]) -> Void) {
            let start = buffer.count
            CompactJSON.append(string: key, to: &buffer)
            buffer.append(UInt8(ascii: ":"))
            writeValue(&buffer)
            let range = start..<buffer.count
            var index = members.endIndex
            while index > members.startIndex, !Self.precedes(members[index - 1].key, key) {
                index -= 1
            }
            if index < members.endIndex, members[index].key == key {
                members[index].range = range
            } else {
                members.insert((key, range), at: index)
            }
        }

        mutating func set(_ key: String, _ value: JSONValue) {
            put(key) { CompactJSON.append(value, to: &$0) }
        }

        mutating func set(_ key: String, string: String) {
            put(key) { CompactJSON.append(string: string, to: &$0) }
        }

        /// Like `put`, for a value that is text needing no escape (an id, an instant), written between quotes.
        private mutating func putQuoted(_ key: String, _ writeText: (inout [UInt8]) -> Void) {
            put(key) { bytes in
                bytes.append(UInt8(ascii: "\""))
                writeText(&bytes)
                bytes.append(UInt8(ascii: "\""))
            }
        }

        /// An id, as `uuidString` writes it.
        mutating func set(_ key: String, uuid: UUID) {
            putQuoted(key) { UUIDText.append(uuid, to: &$0) }
        }

        mutating func set(_ key: String, number: Double) {
            put(key) { CompactJSON.append(number: number, to: &$0) }
        }

        mutating func set(_ key: String, bool: Bool) {
            put(key) { $0 += (bool ? "true" : "false").utf8 }
        }

        /// An instant as the model writes one (`AlarmJSON.string(from:)`), or `null`.
        mutating func set(_ key: String, date: Date?) {
            guard let date else { return put(key) { $0 += "null".utf8 } }
            putQuoted(key) { InstantText.append(date, to: &$0) }
        }

        /// A nested object.
        mutating func set(_ key: String, object: Object) {
            put(key) { object.write(to: &$0) }
        }

        /// A value already written as JSON.
        mutating func set(_ key: String, json: [UInt8]) {
            put(key) { $0 += json }
        }

        /// Appends the object, its members in key order.
        func write(to bytes: inout [UInt8]) {
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += buffer[member.range]
            }
            bytes.append(UInt8(ascii: "}"))
        }

        var bytes: [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(buffer.count + members.count + 1)
            write(to: &bytes)
            return bytes
        }

        /// This object and the members of another, written by `JSONEncoder` (`other`, whose
        /// members are at `otherMembers`), as one object in key order. A member of the other is
        /// compared by its key as written (the bytes between its quotes), which is the encoder's
        /// order for keys without escapes, as all of the model's are.
        func merged(with other: [UInt8], members otherMembers: [Range<Int>]) -> [UInt8] {
            var bytes: [UInt8] = [UInt8(ascii: "{")]
            bytes.reserveCapacity(buffer.count + other.count + 1)
            var i = members.startIndex, j = otherMembers.startIndex
            func append(_ source: [UInt8], _ range: Range<Int>) {
                if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
                bytes += source[range]
            }
            while i < members.endIndex || j < otherMembers.endIndex {
                let takeOwn = j == otherMembers.endIndex
                    || (i < members.endIndex && members[i].key.utf8.lexicographicallyPrecedes(JSONObjectMembers.key(other, otherMembers[j])))
                if takeOwn {
                    append(buffer, members[i].range)
                    i += 1
                } else {
                    append(other, otherMembers[j])
                    j += 1
                }
            }
            bytes.append(UInt8(ascii: "}"))
            return bytes
        }
    }
}

extension AlarmEvent {
    /// The event as `AlarmJSON.encoder` writes it.
    public var json: [UInt8] {
        var object = CompactJSON.Object()
        object.set("event", string: name.rawValue)
        if let alarmID { object.set("alarmID", uuid: alarmID) } else { object.set("alarmID", .null) }
        object.set("at", date: at)
        for (key, value) in details { object.set(key, value) }
        return object.bytes
    }
}

extension AlarmPresentationState.Mode {
    /// The mode as `AlarmJSON.encoder` writes it.
    var object: CompactJSON.Object {
        var object = CompactJSON.Object()
        switch self {
        case .alert(let alert):
            object.set("mode", string: "alert")
            var time = CompactJSON.Object()
            time.set("hour", number: Double(alert.time.hour))
            time.set("minute", number: Double(alert.time.minute))
            object.set("time", object: time)
        case .countdown(let countdown):
            object.set("mode", string: "countdown")
            object.set("totalCountdownDuration", number: countdown.totalCountdownDuration)
            object.set("previouslyElapsedDuration", number: countdown.previouslyElapsedDuration)
            object.set("startDate", date: countdown.startDate)
            object.set("fireDate", date: countdown.fireDate)
        case .paused(let paused):
            object.set("mode", string: "paused")
            object.set("totalCountdownDuration", number: paused.totalCountdownDuration)
            object.set("previouslyElapsedDuration", number: paused.previouslyElapsedDuration)
        }
        return object
    }
}

extension AlarmDocument {
    /// The document without its configuration: the part of a document that changes with its state.
    var objectOmittingConfiguration: CompactJSON.Object {
        var object = CompactJSON.Object()
        object.set("id", uuid: id)
        object.set("state", string: state.rawValue)
        if let presentationState { object.set("presentationState", object: presentationState.object) } else { object.set("presentationState", .null) }
        object.set("nextAlertDate", date: nextAlertDate)
        return object
    }
}

extension AlarmRecord {
    /// The record without its configuration.
    var objectOmittingConfiguration: CompactJSON.Object {
        var object = CompactJSON.Object()
        object.set("id", uuid: id)
        if let pendingOccurrenceDay { object.set("pendingOccurrenceDay", string: pendingOccurrenceDay.description) }
        if let lastOccurrenceDay { object.set("lastOccurrenceDay", string: lastOccurrenceDay.description) }
        object.set("phase", string: phase.state.rawValue)
        switch phase {
        case .scheduled(let alertDate):
            object.set("alertDate", date: alertDate)
        case .countdown(let countdown):
            object.set("totalCountdownDuration", number: countdown.totalCountdownDuration)
            object.set("previouslyElapsedDuration", number: countdown.previouslyElapsedDuration)
            object.set("startDate", date: countdown.startDate)
            object.set("fireDate", date: countdown.fireDate)
            object.set("isPreAlert", bool: countdown.isPreAlert)
        case .paused(let total, let elapsed):
            object.set("totalCountdownDuration", number: total)
            object.set("previouslyElapsedDuration", number: elapsed)
        case .alerting(let since, let alertDate):
            object.set("since", date: since)
            object.set("alertDate", date: alertDate)
        }
        return object
    }
}
