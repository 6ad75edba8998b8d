import AlarmKit

/// The exit statuses of `alarmctl`, which scripts can rely on (docs/alarmctl.md lists them).
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// The command did what was asked.
    case success = 0
    /// The node refused the request: invalid state, invalid configuration, limit reached, …
    case refused = 1
    /// The command line is wrong: unknown option, bad duration, time or date.
    case usage = 2
    /// The broker or the node cannot be reached, or the node is offline or did not answer.
    case unreachable = 3
    /// No alarm matches the id, or a prefix matches several.
    case notFound = 4
    /// The node has not authorized scheduling (or refused the authorization request).
    case unauthorized = 5
    /// Standard output cannot be written (a full disk, an I/O error); a reader that went away is no error.
    case outputFailed = 6
}

/// Why an `alarmctl` command failed: a message that says what to do, and the exit status.
public enum AlarmctlError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The command line cannot be read; the message names the accepted forms.
    case usage(String)
    /// The node answered with a refusal.
    case refused(NodeFailure)
    /// The broker or the node cannot be reached.
    case unreachable(String)
    /// No alarm matches.
    case notFound(String)
    /// An id prefix matches several alarms.
    case ambiguous(String)
    /// The node does not let anyone schedule alarms yet.
    case unauthorized(String)

    /// The error a node connection reported, as `alarmctl` reports it.
    public init(_ failure: NodeFailure) {
        switch failure {
        case .node(.notFound): self = .notFound(failure.message)
        case .node(.unavailable(let reason)): self = .unreachable(reason)
        case .node(.unauthorized(let state)):
            self = .unauthorized("the node has not authorized scheduling (authorization is \(state.rawValue)): "
                + Self.authorizationAdvice(state))
        default: self = .refused(failure)
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .usage: .usage
        case .refused: .refused
        case .unreachable: .unreachable
        case .notFound, .ambiguous: .notFound
        case .unauthorized: .unauthorized
        }
    }

    /// A stable name for `--json` output: the node's error code for refusals.
    public var code: String {
        switch self {
        case .usage: "usage"
        case .refused(let error): error.code.rawValue
        case .unreachable: "unreachable"
        case .notFound: "notFound"
        case .ambiguous: "ambiguous"
        case .unauthorized: "unauthorized"
        }
    }

    public var message: String {
        switch self {
        case .usage(let message), .unreachable(let message), .notFound(let message), .ambiguous(let message),
             .unauthorized(let message):
            message
        case .refused(let error):
            "the node refused: \(error.message)"
        }
    }

    public var description: String { message }

    /// What to do about an authorization that is not `authorized`: a denied node does not ask
    /// again until its decision is reset on the node itself.
    public static func authorizationAdvice(_ state: AlarmManager.AuthorizationState) -> String {
        switch state {
        case .denied:
            return "the node's buttons denied it: run `alarmd reset-authorization` on the node (as its user), "
                + "then `alarmctl authorize`, or set authorization = \"authorized\" in the node's config"
        default:
            return "run `alarmctl authorize` and press the node's stop button while it chirps (a long press on a "
                + "single-button board), or set authorization = \"authorized\" in the node's config"
        }
    }

    /// Human syntax that cannot be read, or that the node would refuse, as a usage error that
    /// names alarmctl's options.
    public init(_ error: HumanSyntaxError) {
        switch error {
        case .unreadable(let message): self = .usage(message)
        case .refused(.title, let reason): self = .usage("--title: \(reason)")
        case .refused(.sound, let reason): self = .usage("--sound \(reason)")
        case .refused(.date, _), .refused(.configuration, _): self = .usage(error.message)
        }
    }

    /// The value `read` returns, with its ``HumanSyntaxError`` turned into a usage error.
    public static func reading<Value>(_ read: () throws(HumanSyntaxError) -> Value) throws(AlarmctlError) -> Value {
        do { return try read() } catch { throw AlarmctlError(error) }
    }

    /// The answer of a request to a node or a group, its refusal as alarmctl reports it.
    public static func asking<Value>(_ ask: () async throws(AlarmNodeError) -> Value) async throws(AlarmctlError) -> Value {
        do { return try await ask() } catch { throw AlarmctlError(NodeFailure(error)) }
    }
}
