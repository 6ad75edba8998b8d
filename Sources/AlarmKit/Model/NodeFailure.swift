import FoundationEssentials

/// A refusal as a node's reply carries it: AlarmKit's error or one of the node's own, with the
/// reply's `code`, `message` and `field`. This is the one place errors are mapped to and from
/// the wire's codes; `error` is what a call throws for it.
public enum NodeFailure: Sendable, Hashable, CustomStringConvertible {
    /// AlarmKit's own error.
    case alarmKit(AlarmManager.AlarmError)
    /// An error only a node has.
    case node(AlarmNodeError)

    /// The stable code used in MQTT replies (docs/mqtt.md).
    public enum Code: String, Sendable, Hashable, Codable {
        case badRequest, notFound, invalidState, invalidConfiguration, maximumLimitReached,
             unauthorized, unavailable, `internal`
    }

    /// Classifies an error thrown by a node's call; anything else is an `internal` failure.
    public init(_ error: any Error) {
        switch error {
        case let error as AlarmManager.AlarmError: self = .alarmKit(error)
        case let error as AlarmNodeError: self = .node(error)
        default: self = .node(.internal("\(error)"))
        }
    }

    /// Rebuilds an error from an MQTT reply's `error` object.
    ///
    /// - Parameters:
    ///   - alarmID: the id the request named, for `notFound`.
    ///   - field: the reply's `field`, for `invalidConfiguration` and `badRequest`.
    public init(code: Code, message: String, field: String? = nil, alarmID: UUID? = nil) {
        let reason = field.map { message.hasPrefix("\($0): ") ? String(message.dropFirst($0.count + 2)) : message } ?? message
        switch code {
        case .maximumLimitReached: self = .alarmKit(.maximumLimitReached)
        case .notFound: self = .node(alarmID.map { .notFound($0) } ?? .badRequest(field: field, reason: reason))
        case .invalidState: self = .node(.invalidState(message))
        case .invalidConfiguration: self = .node(.invalidConfiguration(field: field ?? "configuration", reason: reason))
        case .unauthorized: self = .node(.unauthorized(.notDetermined))
        case .badRequest: self = .node(.badRequest(field: field, reason: reason))
        case .unavailable: self = .node(.unavailable(message))
        case .internal: self = .node(.internal(message))
        }
    }

    /// The error a call throws for this refusal.
    public var error: any Error {
        switch self {
        case .alarmKit(let error as any Error), .node(let error as any Error): error
        }
    }

    public var code: Code {
        switch self {
        case .alarmKit(.maximumLimitReached): .maximumLimitReached
        case .node(let error): error.code
        }
    }

    /// What went wrong and what to do.
    public var message: String {
        switch self {
        case .alarmKit(let error): error.message
        case .node(let error): error.message
        }
    }

    /// The path of the offending field, for `invalidConfiguration` and `badRequest`.
    public var field: String? { if case .node(let error) = self { error.field } else { nil } }

    public var description: String { "\(code.rawValue): \(message)" }
}
