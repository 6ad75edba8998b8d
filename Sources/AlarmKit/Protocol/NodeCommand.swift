import FoundationEssentials

/// A command sent to a node on `<base>/cmd/<operation>` (docs/mqtt.md), as the node reads it.
public struct NodeCommand: Sendable, Hashable {
    public enum Operation: String, Sendable, Hashable, CaseIterable, Codable {
        case schedule, cancel, stop, countdown, pause, resume, requestAuthorization, list

        /// The lifecycle operation on an existing alarm, for the operations that are one.
        public var alarmOperation: AlarmOperation? { AlarmOperation(rawValue: rawValue) }
    }

    public enum Action: Sendable, Hashable {
        /// `group`: the group it came through, kept in the alarm's document.
        case schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>, group: String?)
        case alarm(AlarmOperation, id: UUID)
        case requestAuthorization
        case list
    }

    public var action: Action
    public var replyRoute: ReplyRoute?
    /// When the requester sent the command (the payload's `sentAt`): a countdown it starts counts
    /// from it, so that the members of a group count from one instant (``AlarmEngine/countdownOrigin(sentAt:now:)``).
    public var sentAt: Date?

    /// Where the reply to a command goes, and what it echoes.
    public struct ReplyRoute: Sendable, Hashable {
        public enum Correlation: Sendable, Hashable {
            /// MQTT v5 correlation data, returned as a property.
            case data([UInt8])
            /// The payload's `correlationID`, echoed in the reply's payload.
            case payload(JSONValue)
        }
        public var topic: String
        public var correlation: Correlation?
    }

    /// Reads a command in one pass of `JSONDecoder` into a ``CommandEnvelope``. Failures come
    /// with the reply route when one could be read, so that even a rejected command is answered.
    /// Never traps, whatever the bytes.
    ///
    /// - Parameters:
    ///   - operation: the last level of the command topic.
    ///   - responseTopic, correlationData: the MQTT v5 properties, when present; they win over
    ///     `replyTo` and `correlationID` in the payload.
    ///   - group: the group whose topic it came on (`<prefix>/groups/<group>/cmd/…`): a schedule
    ///     then needs its `id`, so that every member holds the alarm under the same one.
    public static func decode(
        operation: String, payload: [UInt8], responseTopic: String? = nil, correlationData: [UInt8]? = nil,
        group: String? = nil
    ) -> Result<NodeCommand, Rejection> {
        let v5Route = responseTopic.map { ReplyRoute(topic: $0, correlation: correlationData.map { .data($0) }) }
        func refused(_ reason: String) -> Result<NodeCommand, Rejection> { .failure(Rejection(error: .badRequest(field: nil, reason: reason), replyRoute: v5Route)) }
        guard payload.count <= AlarmLimits.commandPayloadBytes else {
            return refused("the payload is \(payload.count) bytes; at most 65536 are accepted")
        }
        let isBlank = payload.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let decoder = AlarmJSON.strictDecoder
        decoder.userInfo[.commandOperation] = operation
        decoder.userInfo[.commandHasResponseTopic] = v5Route != nil
        decoder.userInfo[.commandGroup] = group
        let envelope: CommandEnvelope
        do {
            envelope = try decoder.decode(CommandEnvelope.self, from: isBlank ? Data("{}".utf8) : Data(payload))
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty,
                DecodingError.valueNotFound(_, let context) where context.codingPath.isEmpty {
            return refused("the payload must be a JSON object")
        } catch {
            return refused("the payload is not valid UTF-8 JSON")
        }
        let route = v5Route ?? envelope.replyRoute
        switch envelope.action {
        case .success(let action): return .success(NodeCommand(action: action, replyRoute: route, sentAt: envelope.sentAt))
        case .failure(let error): return .failure(Rejection(error: error, replyRoute: route))
        }
    }

    /// A command that was refused before it ran.
    public struct Rejection: Error, Sendable, Hashable {
        public var error: AlarmNodeError
        public var replyRoute: ReplyRoute?
    }
}

extension CodingUserInfoKey {
    /// The operation a command's payload is decoded for: the last level of its topic.
    static let commandOperation = CodingUserInfoKey(rawValue: "alarmkit.commandOperation")!
    /// True when the command came with an MQTT v5 response topic, which wins over `replyTo`.
    static let commandHasResponseTopic = CodingUserInfoKey(rawValue: "alarmkit.commandHasResponseTopic")!
    /// The group a command came through, when it came on a group's topic.
    static let commandGroup = CodingUserInfoKey(rawValue: "alarmkit.commandGroup")!
}

/// A command's payload, typed: where its reply goes, when it was sent, and the action it asks
/// for or why it is refused. Decoding fails only when the payload is not a JSON object; any other
/// fault is kept in `action`, so that the reply route read before it still answers the command.
struct CommandEnvelope: Decodable {
    var replyRoute: NodeCommand.ReplyRoute?
    var sentAt: Date?
    var action: Result<NodeCommand.Action, AlarmNodeError>

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        let replyTo = AnyCodingKey(stringValue: "replyTo"), id = AnyCodingKey(stringValue: "id")
        // An id or replyTo set to `null` is one left out, as in a configuration: a client's encoder may write its nil so.
        func given(_ key: AnyCodingKey) -> Bool { fields.contains(key) && (try? fields.decodeNil(forKey: key)) != true }
        if given(replyTo), decoder.userInfo[.commandHasResponseTopic] as? Bool != true {
            guard let topic = try? fields.decode(String.self, forKey: replyTo), NodeTopics.isTopicName(topic) else {
                action = .failure(.badRequest(field: "replyTo", reason: "must be the topic to reply on: a non-empty string without wildcards or U+0000"))
                return
            }
            let correlationKey = AnyCodingKey(stringValue: "correlationID")
            let correlationID = fields.contains(correlationKey) ? try? fields.decode(JSONValue.self, forKey: correlationKey) : nil
            replyRoute = NodeCommand.ReplyRoute(topic: topic, correlation: correlationID.map { .payload($0) })
        }
        let operationName = decoder.userInfo[.commandOperation] as? String ?? ""
        guard let operation = NodeCommand.Operation(rawValue: operationName) else {
            let names = NodeCommand.Operation.allCases.map(\.rawValue).joined(separator: ", ")
            action = .failure(.badRequest(field: nil, reason: "'\(operationName)' is not an operation: use one of \(names)"))
            return
        }
        var allowed: Set<String> = ["replyTo", "correlationID", "sentAt"]
        if operation == .schedule { allowed.formUnion(["id", "configuration"]) }
        if operation.alarmOperation != nil { allowed.insert("id") }
        if let unknown = fields.allKeys.map(\.stringValue).sorted().first(where: { !allowed.contains($0) }) {
            action = .failure(.badRequest(field: unknown, reason: "unknown field; \(operationName) takes \(allowed.sorted().joined(separator: ", "))"))
            return
        }
        let sentAtKey = AnyCodingKey(stringValue: "sentAt")
        if fields.contains(sentAtKey) {
            guard let text = try? fields.decode(String.self, forKey: sentAtKey), let date = AlarmJSON.date(from: text) else {
                action = .failure(.badRequest(field: "sentAt", reason: "must be an ISO 8601 instant such as 2026-11-22T07:00:00.000Z: when the command was sent"))
                return
            }
            sentAt = date
        }
        func readID() throws(AlarmNodeError) -> UUID? {
            guard given(id) else { return nil }
            guard let text = try? fields.decode(String.self, forKey: id), let uuid = UUID(uuidString: text) else {
                throw .badRequest(field: "id", reason: "must be a UUID string such as 2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77")
            }
            return uuid
        }
        action = Result { () throws(AlarmNodeError) -> NodeCommand.Action in
            switch operation {
            case .schedule:
                let group = decoder.userInfo[.commandGroup] as? String
                guard let alarmID = try readID() ?? (group == nil ? UUID() : nil) else {
                    throw .badRequest(field: "id", reason: "a schedule sent to a group needs the alarm's UUID, so that every member holds it under the same id")
                }
                let key = AnyCodingKey(stringValue: "configuration")
                guard fields.contains(key) else { throw .badRequest(field: "configuration", reason: "this field is required") }
                do {
                    return .schedule(id: alarmID, configuration: try fields.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, forKey: key), group: group)
                } catch { throw AlarmNodeError(decoding: error) }
            case .cancel, .stop, .countdown, .pause, .resume:
                guard let alarmID = try readID() else { throw .badRequest(field: "id", reason: "this field is required: the alarm's UUID") }
                return .alarm(operation.alarmOperation!, id: alarmID)
            case .requestAuthorization: return .requestAuthorization
            case .list: return .list
            }
        }
    }
}

/// The answer to a command (docs/mqtt.md).
public enum NodeReply: Sendable, Hashable {
    /// The alarm after the operation; `nil` when the operation removed it.
    case alarm(AlarmDocument?)
    case alarms([AlarmDocument])
    case authorization(AlarmManager.AuthorizationState)
    /// AlarmKit's error or one of the node's own, with its code on the wire.
    case failure(NodeFailure)

    /// The reply's JSON, with `correlationID` echoed when the request carried one in its payload,
    /// and `node` (the member's id) for a command sent to a group.
    public func payload(correlationID: JSONValue? = nil, node: String? = nil) -> [UInt8] {
        (try? AlarmJSON.encode(ReplyWire(reply: self, correlationID: correlationID, node: node))) ?? []
    }

    /// The reply as written.
    private struct ReplyWire: Encodable {
        let reply: NodeReply
        let correlationID: JSONValue?
        let node: String?

        private enum CodingKeys: String, CodingKey { case ok, alarm, alarms, authorization, error, correlationID, node }
        private enum ErrorKeys: String, CodingKey { case code, message, field }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            let ok = if case .failure = reply { false } else { true }
            try container.encode(ok, forKey: .ok)
            switch reply {
            case .alarm(let document): try container.encodeOrNull(document, forKey: .alarm)
            case .alarms(let documents): try container.encode(documents, forKey: .alarms)
            case .authorization(let state): try container.encode(state, forKey: .authorization)
            case .failure(let error):
                var details = container.nestedContainer(keyedBy: ErrorKeys.self, forKey: .error)
                try details.encode(error.code, forKey: .code)
                try details.encode(error.message, forKey: .message)
                try details.encodeIfPresent(error.field, forKey: .field)
            }
            try container.encodeIfPresent(correlationID, forKey: .correlationID)
            try container.encodeIfPresent(node, forKey: .node)
        }
    }

    /// Reads a reply; `alarmID` is the id the request named, to rebuild `notFound`.
    public static func decode(_ payload: [UInt8], alarmID: UUID? = nil) throws -> NodeReply {
        struct Wire: Decodable {
            struct ErrorObject: Decodable { var code: String; var message: String; var field: String? }
            var ok: Bool
            var alarm: AlarmDocument?
            var alarms: [AlarmDocument]?
            var authorization: AlarmManager.AuthorizationState?
            var error: ErrorObject?
        }
        let wire = try AlarmJSON.decoder.decode(Wire.self, from: Data(payload))
        if !wire.ok {
            let error = wire.error ?? .init(code: "internal", message: "the node refused without saying why", field: nil)
            // A code from a newer alarmd is no reason to lose its message.
            return .failure(NodeFailure(code: .init(rawValue: error.code) ?? .internal, message: error.message, field: error.field, alarmID: alarmID))
        }
        if let alarms = wire.alarms {
            // Anyone on the broker can answer on a reply topic: a list naming an alarm twice is not the node's.
            guard Set(alarms.map(\.id)).count == alarms.count else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "the list names an alarm twice")) }
            return .alarms(alarms)
        }
        if let authorization = wire.authorization { return .authorization(authorization) }
        return .alarm(wire.alarm)
    }
}
