import FoundationEssentials

/// Why a node refused a call, for the failures AlarmKit does not have: the node's own errors.
/// AlarmKit's own error (``AlarmManager/AlarmError``) comes out of the same calls.
///
/// Each error has a stable `code` (the MQTT reply's `error.code`) and a `message` that says what
/// went wrong and what to do.
public enum AlarmNodeError: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
    /// No alarm has this id.
    case notFound(UUID)
    /// The operation is not allowed in the alarm's current state.
    case invalidState(String)
    /// A field of the configuration is not acceptable; `field` is its path, e.g. `configuration.schedule`.
    case invalidConfiguration(field: String, reason: String)
    /// The node has not authorized scheduling.
    case unauthorized(AlarmManager.AuthorizationState)
    /// The request could not be read; `field` is the path of the offending field, if known.
    case badRequest(field: String?, reason: String)
    /// The node could not be reached or did not answer (remote managers only).
    case unavailable(String)
    /// The node failed on its side, e.g. it could not write its state to disk.
    case `internal`(String)

    /// The stable code used in MQTT replies.
    public var code: NodeFailure.Code {
        switch self {
        case .notFound: .notFound
        case .invalidState: .invalidState
        case .invalidConfiguration: .invalidConfiguration
        case .unauthorized: .unauthorized
        case .badRequest: .badRequest
        case .unavailable: .unavailable
        case .internal: .internal
        }
    }

    /// What went wrong and what to do.
    public var message: String {
        switch self {
        case .notFound(let id): "no alarm has id \(id.uuidString): list the node's alarms to find the right id"
        case .invalidState(let reason), .unavailable(let reason), .internal(let reason): reason
        case .invalidConfiguration(let field, let reason): "\(field): \(reason)"
        case .unauthorized(let state):
            "this node has not authorized scheduling (authorization is \(state.rawValue)): "
                + (state == .denied
                    ? "run alarmd reset-authorization on the node (alarmd stopped) and request authorization again, "
                    : "request authorization and press the node's stop button during the prompt, ")
                + "or set authorization = \"authorized\" in its config"
        case .badRequest(let field, let reason): field.map { "\($0): \(reason)" } ?? reason
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
    /// What `localizedDescription` shows, as an app shows an error: the message.
    public var errorDescription: String? { message }

    /// The path of the offending field, for `invalidConfiguration` and `badRequest`.
    public var field: String? {
        switch self {
        case .invalidConfiguration(let field, _), .badRequest(let field?, _): field
        default: nil
        }
    }
}

extension AlarmNodeError {
    /// Turns a `DecodingError` into a `badRequest` that names the field and says what is wrong.
    public init(decoding error: any Error, prefix: String? = nil) {
        // Foundation's own errors (a string that is not UTF-8, met while decoding a field) print
        // as its internal types, not for a client's eyes: only their line and column are kept.
        func notJSON(_ error: any Error) -> String {
            let location = "\(error)".firstMatch(of: /line: (\d+), column: (\d+)/).map { " (line \($0.1), column \($0.2))" }
            return "the payload is not valid UTF-8 JSON" + (location ?? "")
        }
        guard let error = error as? DecodingError else {
            self = .badRequest(field: prefix, reason: notJSON(error))
            return
        }
        func path(_ codingPath: [any CodingKey]) -> String? {
            let parts = (prefix.map { [$0] } ?? []) + codingPath.map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }
            guard !parts.isEmpty else { return nil }
            return parts.joined(separator: ".").replacing(".[", with: "[")
        }
        switch error {
        case .typeMismatch(let type, let context):
            self = .badRequest(field: path(context.codingPath), reason: "expected \(Self.jsonKind(of: type))")
        case .valueNotFound(let type, let context):
            self = .badRequest(field: path(context.codingPath), reason: "expected \(Self.jsonKind(of: type)), found null")
        case .keyNotFound(let key, let context):
            self = .badRequest(field: path(context.codingPath + [key]), reason: "this field is required")
        case .dataCorrupted(let context):
            let reason = context.underlyingError.map(notJSON) ?? context.debugDescription
            self = .badRequest(field: path(context.codingPath), reason: reason)
        @unknown default:
            self = .badRequest(field: prefix, reason: "\(error)")
        }
    }

    private static func jsonKind(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Double.Type, is Float.Type: "a number"
        case is UUID.Type: "a UUID string"
        default: String(describing: type).contains("Array") ? "an array" : "a JSON object"
        }
    }
}
