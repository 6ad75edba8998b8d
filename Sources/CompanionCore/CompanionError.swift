import AlarmKit
import Hummingbird

/// Why the companion refused a request or an option: a code for scripts, the HTTP status, and a
/// message that says what went wrong and what to do. The node's own refusals keep its words.
public struct CompanionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `unknownNode`, `unknownAlarm`, `unavailable`, `badRequest`, `tooLarge`, `forbidden`, `unauthenticated`,
    /// `usage`, or the node's code (`invalidState`, `notFound`, …).
    public var code: String
    public var status: HTTPResponse.Status
    public var message: String

    public var description: String { message }
}

extension CompanionError {
    public static func unknownNode(_ node: String) -> Self {
        Self(code: "unknownNode", status: .notFound,
             message: "no node '\(node)' is known under this companion's topic prefix: reload the page")
    }

    public static func unknownAlarm(_ id: String, node: String) -> Self {
        Self(code: "unknownAlarm", status: .notFound, message: "node '\(node)' has no alarm \(id): it may have ended; reload the page")
    }

    public static func unknownAlarm(_ id: String, group: String) -> Self {
        Self(code: "unknownAlarm", status: .notFound,
             message: "no node holds alarm \(id) of group '\(group)': it may have ended; reload the page")
    }

    public static func badRequest(_ message: String) -> Self { Self(code: "badRequest", status: .badRequest, message: message) }

    public static func forbidden(_ message: String) -> Self { Self(code: "forbidden", status: .forbidden, message: message) }

    public static func usage(_ message: String) -> Self { Self(code: "usage", status: .internalServerError, message: message) }

    public static let tooManySignIns = Self(
        code: "tooManySignIns", status: .tooManyRequests,
        message: "too many sign-in attempts are waiting: wait a minute, then sign in again")

    public static let tooLarge = Self(
        code: "tooLarge", status: .contentTooLarge,
        message: "the request body is larger than \(CompanionRequests.maximumBodySize) bytes: send less")

    public static let unauthenticated = Self(
        code: "unauthenticated", status: .unauthorized, message: "sign in first: open the page and give the companion's password")

    /// A node's refusal or an unreachable node, in the node's words.
    public init(node failure: NodeFailure) {
        let status: HTTPResponse.Status = switch failure.code {
        case .notFound: .notFound
        case .invalidState, .maximumLimitReached: .conflict
        case .invalidConfiguration, .badRequest: .unprocessableContent
        case .unauthorized: .forbidden
        case .unavailable: .serviceUnavailable
        case .internal: .badGateway
        }
        self.init(code: failure.code.rawValue, status: status, message: failure.message)
    }
}
