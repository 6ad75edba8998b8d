import FoundationEssentials

/// A command sent to a node on `<base>/cmd/<operation>` (SPEC §5), as the node reads it.
public struct NodeCommand: Sendable, Hashable {
    public enum Operation: String, Sendable, Hashable, CaseIterable, Codable {
        case schedule, cancel, stop, countdown, pause, resume, requestAuthorization, list

        /// The lifecycle operation on an existing alarm, for the operations that are one.
        public var alarmOperation: AlarmOperation? { AlarmOperation(rawValue: rawValue) }
    }

    public enum Action: Sendable, Hashable {
        case schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>)
        case alarm(AlarmOperation, id: UUID)
        case requestAuthorization
        case list
    }

    public var action: Action
    public var replyRoute: ReplyRoute?

    public init(action: Action, replyRoute: ReplyRoute? = nil) {
        self.action = action
        self.replyRoute = replyRoute
    }

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

        public init(topic: String, correlation: Correlation?) {
            self.topic = topic
            self.correlation = correlation
        }
    }

    /// Reads a command. Failures come with the reply route when one could be read, so that even
    /// a rejected command is answered. Never traps, whatever the bytes.
    ///
    /// - Parameters:
    ///   - operation: the last level of the command topic.
    ///   - responseTopic, correlationData: the MQTT v5 properties, when present; they win over
    ///     `replyTo` and `correlationID` in the payload.
    public static func decode(
        operation: String, payload: [UInt8], responseTopic: String? = nil, correlationData: [UInt8]? = nil
    ) -> Result<NodeCommand, Rejection> {
        var route = responseTopic.map { ReplyRoute(topic: $0, correlation: correlationData.map { .data($0) }) }
        func reject(_ error: AlarmManager.AlarmError) -> Result<NodeCommand, Rejection> {
            .failure(Rejection(error: error, replyRoute: route))
        }
        guard payload.count <= AlarmLimits.commandPayloadBytes else {
            return reject(.badRequest(field: nil, reason: "the payload is \(payload.count) bytes; at most 65536 are accepted"))
        }
        var fields: [String: JSONValue] = [:]
        if !payload.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            switch try? JSONValue(parsing: payload) {
            case .object(let object)?: fields = object
            case _?: return reject(.badRequest(field: nil, reason: "the payload must be a JSON object"))
            case nil: return reject(.badRequest(field: nil, reason: "the payload is not valid UTF-8 JSON"))
            }
        }
        if route == nil, let replyTo = fields["replyTo"] {
            guard case .string(let topic) = replyTo, !topic.isEmpty, !topic.contains("+"), !topic.contains("#") else {
                return reject(.badRequest(field: "replyTo", reason: "must be a topic without wildcards"))
            }
            route = ReplyRoute(topic: topic, correlation: fields["correlationID"].map { .payload($0) })
        }
        guard let known = Operation(rawValue: operation) else {
            let names = Operation.allCases.map(\.rawValue).joined(separator: ", ")
            return reject(.badRequest(field: nil, reason: "'\(operation)' is not an operation: use one of \(names)"))
        }
        var allowed: Set<String> = ["replyTo", "correlationID"]
        switch known {
        case .schedule: allowed.formUnion(["id", "configuration"])
        case .cancel, .stop, .countdown, .pause, .resume: allowed.insert("id")
        case .requestAuthorization, .list: break
        }
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            return reject(.badRequest(field: unknown, reason: "unknown field; \(operation) takes \(allowed.sorted().joined(separator: ", "))"))
        }

        func readID(required: Bool) -> Result<UUID?, AlarmManager.AlarmError> {
            guard let value = fields["id"] else {
                return required ? .failure(.badRequest(field: "id", reason: "this field is required: the alarm's UUID")) : .success(nil)
            }
            guard case .string(let text) = value, let id = UUIDText.uuid(text) else {
                return .failure(.badRequest(field: "id", reason: "must be a UUID string such as 2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77"))
            }
            return .success(id)
        }

        let action: Action
        switch known {
        case .schedule:
            let id: UUID?
            switch readID(required: false) {
            case .success(let value): id = value
            case .failure(let error): return reject(error)
            }
            guard let configurationValue = fields["configuration"] else {
                return reject(.badRequest(field: "configuration", reason: "this field is required"))
            }
            do {
                let data = try JSONEncoder().encode(configurationValue)
                let configuration = try AlarmJSON.strictDecoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: data)
                action = .schedule(id: id ?? UUID(), configuration: configuration)
            } catch {
                return reject(AlarmManager.AlarmError(decoding: error, prefix: "configuration"))
            }
        case .cancel, .stop, .countdown, .pause, .resume:
            switch readID(required: true) {
            case .success(let id?): action = .alarm(known.alarmOperation!, id: id)
            case .success(nil): return reject(.badRequest(field: "id", reason: "this field is required"))
            case .failure(let error): return reject(error)
            }
        case .requestAuthorization:
            action = .requestAuthorization
        case .list:
            action = .list
        }
        return .success(NodeCommand(action: action, replyRoute: route))
    }

    /// A command that was refused before it ran.
    public struct Rejection: Error, Sendable, Hashable {
        public var error: AlarmManager.AlarmError
        public var replyRoute: ReplyRoute?
    }
}

/// The answer to a command (SPEC §5).
public enum NodeReply: Sendable, Hashable {
    /// The alarm after the operation; `nil` when the operation removed it.
    case alarm(AlarmDocument?)
    case alarms([AlarmDocument])
    case authorization(AlarmManager.AuthorizationState)
    case failure(AlarmManager.AlarmError)

    /// The reply's JSON, with `correlationID` echoed when the request carried one in its payload.
    ///
    /// - Parameter encodedDocument: a document's bytes as `AlarmJSON.encoder` writes it, when the
    ///   caller has them (the node has just published it), or nil: the reply to an operation or
    ///   to `list` is then assembled around those bytes instead of encoding the documents again.
    public func payload(correlationID: JSONValue? = nil, encodedDocument: (AlarmDocument) -> [UInt8]? = { _ in nil }) -> [UInt8] {
        // The keys in the order the key-sorted encoder writes them: alarm or alarms, correlationID, ok.
        var bytes: [UInt8]
        switch self {
        case .alarm(let document?):
            guard let encoded = encodedDocument(document) else { return encodedWhole(correlationID: correlationID) }
            bytes = Array(#"{"alarm":"#.utf8) + encoded
        case .alarms(let documents):
            bytes = Array(#"{"alarms":["#.utf8)
            for (index, document) in documents.enumerated() {
                guard let encoded = encodedDocument(document) ?? (try? AlarmJSON.encoder.encode(document)).map(Array.init) else {
                    return encodedWhole(correlationID: correlationID)
                }
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += encoded
            }
            bytes.append(UInt8(ascii: "]"))
        default:
            return encodedWhole(correlationID: correlationID)
        }
        if let correlationID, let encoded = try? AlarmJSON.encoder.encode(correlationID) {
            bytes += Array(#","correlationID":"#.utf8) + encoded
        }
        return bytes + Array(#","ok":true}"#.utf8)
    }

    /// The reply encoded in one piece by `AlarmJSON.encoder`.
    private func encodedWhole(correlationID: JSONValue?) -> [UInt8] {
        Array((try? AlarmJSON.encoder.encode(ReplyWire(reply: self, correlationID: correlationID))) ?? Data())
    }

    /// The reply as written: documents are encoded once, straight into the reply.
    private struct ReplyWire: Encodable {
        let reply: NodeReply
        let correlationID: JSONValue?

        private enum CodingKeys: String, CodingKey { case ok, alarm, alarms, authorization, error, correlationID }
        private enum ErrorKeys: String, CodingKey { case code, message, field }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch reply {
            case .alarm(let document):
                try container.encode(true, forKey: .ok)
                try container.encodeOrNull(document, forKey: .alarm)
            case .alarms(let documents):
                try container.encode(true, forKey: .ok)
                try container.encode(documents, forKey: .alarms)
            case .authorization(let state):
                try container.encode(true, forKey: .ok)
                try container.encode(state, forKey: .authorization)
            case .failure(let error):
                try container.encode(false, forKey: .ok)
                var details = container.nestedContainer(keyedBy: ErrorKeys.self, forKey: .error)
                try details.encode(error.code, forKey: .code)
                try details.encode(error.message, forKey: .message)
                try details.encodeIfPresent(error.field, forKey: .field)
            }
            try container.encodeIfPresent(correlationID, forKey: .correlationID)
        }
    }

    /// Reads a reply; `alarmID` is the id the request named, to rebuild `notFound`.
    public static func decode(_ payload: [UInt8], alarmID: UUID? = nil) throws -> NodeReply {
        struct Wire: Decodable {
            struct ErrorObject: Decodable { var code: AlarmManager.AlarmError.Code; var message: String; var field: String? }
            var ok: Bool
            var alarm: AlarmDocument?
            var alarms: [AlarmDocument]?
            var authorization: AlarmManager.AuthorizationState?
            var error: ErrorObject?
        }
        let wire = try AlarmJSON.decoder.decode(Wire.self, from: Data(payload))
        if !wire.ok {
            let error = wire.error ?? .init(code: .internal, message: "the node refused without saying why", field: nil)
            return .failure(AlarmManager.AlarmError(code: error.code, message: error.message, field: error.field, alarmID: alarmID))
        }
        if let alarms = wire.alarms { return .alarms(alarms) }
        if let authorization = wire.authorization { return .authorization(authorization) }
        return .alarm(wire.alarm)
    }
}
