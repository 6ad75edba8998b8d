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

    /// An object under construction: members in any order, written sorted by key; setting a key
    /// again replaces its value, as a keyed encoding container does. The members are a short
    /// array, searched in place (objects here have a handful of members: a dictionary cost a hash
    /// and an allocation per member, visible in a profile).
    struct Object {
        private var members: [(key: String, value: [UInt8])] = []

        /// The order of keys in a written object: by their UTF-8 bytes.
        static func precedes(_ first: String, _ second: String) -> Bool {
            first.utf8.lexicographicallyPrecedes(second.utf8)
        }

        private mutating func put(_ key: String, _ value: [UInt8]) {
            if let index = members.firstIndex(where: { $0.key == key }) {
                members[index].value = value
            } else {
                members.append((key, value))
            }
        }

        mutating func set(_ key: String, _ value: JSONValue) {
            var bytes: [UInt8] = []
            CompactJSON.append(value, to: &bytes)
            put(key, bytes)
        }

        mutating func set(_ key: String, string: String) {
            var bytes: [UInt8] = []
            CompactJSON.append(string: string, to: &bytes)
            put(key, bytes)
        }

        mutating func set(_ key: String, number: Double) {
            var bytes: [UInt8] = []
            CompactJSON.append(number: number, to: &bytes)
            put(key, bytes)
        }

        mutating func set(_ key: String, bool: Bool) {
            put(key, Array((bool ? "true" : "false").utf8))
        }

        /// An instant as the model writes one (`AlarmJSON.string(from:)`), or `null`.
        mutating func set(_ key: String, date: Date?) {
            guard let date else { return put(key, Array("null".utf8)) }
            set(key, string: AlarmJSON.string(from: date))
        }

        /// A value already written as JSON.
        mutating func set(_ key: String, json: [UInt8]) {
            put(key, json)
        }

        var bytes: [UInt8] {
            var bytes: [UInt8] = [UInt8(ascii: "{")]
            let sorted = members.sorted { Self.precedes($0.key, $1.key) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                CompactJSON.append(string: member.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                bytes += member.value
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
        if let alarmID { object.set("alarmID", string: UUIDText.string(alarmID)) } else { object.set("alarmID", .null) }
        object.set("at", date: at)
        for (key, value) in details { object.set(key, value) }
        return object.bytes
    }
}

extension AlarmPresentationState.Mode {
    /// The mode as `AlarmJSON.encoder` writes it.
    var json: [UInt8] {
        var object = CompactJSON.Object()
        switch self {
        case .alert(let alert):
            object.set("mode", string: "alert")
            var time = CompactJSON.Object()
            time.set("hour", number: Double(alert.time.hour))
            time.set("minute", number: Double(alert.time.minute))
            object.set("time", json: time.bytes)
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
        return object.bytes
    }
}

extension AlarmDocument {
    /// The document without its configuration, as `AlarmJSON.encoder` writes it when told to
    /// leave the configuration out: the part of a document that changes with its state.
    var jsonOmittingConfiguration: [UInt8] {
        var object = CompactJSON.Object()
        object.set("id", string: UUIDText.string(id))
        object.set("state", string: state.rawValue)
        object.set("presentationState", json: presentationState?.json ?? Array("null".utf8))
        object.set("nextAlertDate", date: nextAlertDate)
        return object.bytes
    }
}

extension AlarmRecord {
    /// The record without its configuration, as `AlarmJSON.encoder` writes it when told to
    /// leave the configuration out.
    var jsonOmittingConfiguration: [UInt8] {
        var object = CompactJSON.Object()
        object.set("id", string: UUIDText.string(id))
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
        return object.bytes
    }
}
