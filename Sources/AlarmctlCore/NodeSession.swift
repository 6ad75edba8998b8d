import AlarmKit
import Foundation
import LinuxSystem
import Logging
import Synchronization

/// One `alarmctl` run's conversation with a node over MQTT, through AlarmKit's `RemoteNodeConnection`.
///
/// It fails fast with an error that says what to do: when the MQTT client reports a connection
/// problem (refused, unreachable, bad credentials, TLS), or when the node's retained status says
/// it is offline, instead of waiting for the request's timeout.
public final class NodeSession: Sendable {
    public let settings: RemoteNodeSettings
    public let connection: RemoteNodeConnection
    /// The latest connection problem the MQTT client logged, nil while there is none.
    public let connectionProblems: Broadcast<String?>
    /// The last zone the node's status named: an offline status names none.
    private let lastNamedZone = Mutex<TimeZone?>(nil)

    /// - Parameter verbose: also write the MQTT client's log to standard error.
    public init(settings: RemoteNodeSettings, verbose: Bool = false) {
        let problems = Broadcast<String?>(nil)
        self.settings = settings
        self.connectionProblems = problems
        let logger = Logger(label: "alarmctl") { label in
            ConnectionProblemLogHandler(problems: problems, forwardTo: verbose ? StreamLogHandler.standardError(label: label) : nil)
        }
        self.connection = RemoteNodeConnection(settings: settings, logger: logger)
    }

    /// The node's alarms, asked for with a `list` request.
    public func documents() async throws(AlarmctlError) -> [AlarmDocument] {
        try await answer { connection in try await connection.fetchDocuments() }
    }

    /// Schedules an alarm and returns it as the node holds it.
    ///
    /// - Parameter onAuthorizationPrompt: called first, with the prompt's length in seconds, when
    ///   the node will prompt on its hardware (its authorization is undetermined); the answer then
    ///   waits for the prompt.
    public func schedule(
        id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>, onAuthorizationPrompt: (TimeInterval) -> Void = { _ in }
    ) async throws(AlarmctlError) -> AlarmDocument {
        let status = try await status(online: true)
        let prompting = status.authorization == .notDetermined
        if prompting { onAuthorizationPrompt(status.promptSeconds) }
        return try await answer(deadline: prompting ? NodeStatus.replyWaitWhilePrompting(status, timeout: settings.timeout) : nil) { connection in
            try await connection.schedule(id: id, configuration: configuration)
        }
    }

    /// Runs a lifecycle operation; returns the alarm as the node left it, nil once removed.
    public func perform(_ operation: AlarmOperation, id: UUID) async throws(AlarmctlError) -> AlarmDocument? {
        try await answer { connection in try await connection.performReturningDocument(operation, id: id) }
    }

    /// Asks the node for authorization; it prompts on its hardware (for `hardware.prompt-duration`)
    /// before it answers.
    public func requestAuthorization() async throws(AlarmctlError) -> AlarmManager.AuthorizationState {
        let status = try await status(online: true)
        return try await answer(deadline: NodeStatus.replyWaitWhilePrompting(status, timeout: settings.timeout)) { connection in
            try await connection.requestAuthorization()
        }
    }

    /// The node's retained status, waiting for it up to the settings' timeout. An offline one is returned too, unless `online`.
    public func status(online: Bool = false) async throws(AlarmctlError) -> NodeStatus {
        let statuses = connection.statusUpdates
        connection.start()
        let waited = await race(watchingOffline: false, deadline: settings.timeout) {
            for await case let status? in statuses.stream() { return .success(status) }
            return nil
        }
        guard let waited else {
            if !connection.isConnectedToBroker { throw .unreachable(settings.brokerNotConnectedMessage(waited: settings.timeout)) }
            throw .unreachable("no status from node '\(settings.node)' on broker \(settings.brokerDescription) within \(settings.timeout): "
                + "check the node id (--node, ALARMD_NODE), the topic prefix (--prefix, ALARMD_PREFIX) and that alarmd runs with this broker")
        }
        let status = try waited.get()
        guard !online || status.isOnline else { throw offlineError(status) }
        return status
    }

    /// The node's time zone, from its retained status; it must be online.
    public func timeZone() async throws(AlarmctlError) -> TimeZone {
        let status = try await status(online: true)
        guard let identifier = status.timeZone, let zone = TimeZone(identifier: identifier) else {
            throw .unreachable("node '\(settings.node)' did not publish its time zone: "
                + "write the date with an offset, e.g. 2026-12-24T18:00+01:00")
        }
        return zone
    }

    /// The zone to show times in: the node's, the last one its status named (an offline node's
    /// status names none); this machine's until the node's is known.
    public var displayTimeZone: TimeZone {
        let named = connection.statusUpdates.value?.timeZone.flatMap(TimeZone.init(identifier:))
        return lastNamedZone.withLock { last in
            last = named ?? last
            return last ?? .current
        }
    }

    /// Disconnects from the broker.
    public func close() async { await connection.close() }

    /// The failure of a request to a node whose status says it is offline, and since when.
    public func offlineError(_ status: NodeStatus) -> AlarmctlError {
        .unreachable("node '\(settings.node)' is \(status.stateDescription): start alarmd on it, "
            + "or check the node id (--node, ALARMD_NODE)")
    }

    // MARK: Internals

    /// The connection problem as an error, with the settings that may fix it.
    private func unreachable(_ problem: String) -> AlarmctlError { .unreachable(settings.connectionProblemMessage(problem)) }

    /// Runs a request; a connection problem or an offline node ends it early.
    private func answer<Value: Sendable>(
        deadline: Duration? = nil,
        _ request: @escaping @Sendable (RemoteNodeConnection) async throws -> Value
    ) async throws(AlarmctlError) -> Value {
        // The request has its own timeout and the more precise error; the race's deadline is a backstop.
        let outcome = await race(watchingOffline: true, deadline: deadline ?? settings.timeout + .seconds(1)) {
            do {
                return .success(try await request(self.connection))
            } catch { return .failure(self.translate(NodeFailure(error))) }
        }
        return try (outcome ?? .failure(.unreachable("node '\(settings.node)' did not answer within \(settings.timeout)"))).get()
    }

    private enum RaceOutcome<Value: Sendable>: Sendable {
        /// What ends the race: nil when the work or the deadline ended without an answer.
        case answer(Result<Value, AlarmctlError>?)
        /// A watcher ended without seeing a problem (the stream finished or the race is over).
        case quiet
    }

    /// The first of: `work`'s outcome, a connection problem, and (when `watchingOffline`) an offline
    /// status; nil when `work` gives up or the deadline passes first.
    private func race<Value: Sendable>(
        watchingOffline: Bool, deadline: Duration, _ work: @escaping @Sendable () async -> Result<Value, AlarmctlError>?
    ) async -> Result<Value, AlarmctlError>? {
        let problems = connectionProblems
        let statuses = connection.statusUpdates
        return await withTaskGroup(of: RaceOutcome<Value>.self) { group in
            group.addTask { .answer(await work()) }
            group.addTask {
                for await case let problem? in problems.stream() { return .answer(.failure(self.unreachable(problem))) }
                return .quiet
            }
            if watchingOffline {
                group.addTask {
                    for await status in statuses.stream() {
                        if let status, !status.isOnline { return .answer(.failure(self.offlineError(status))) }
                    }
                    return .quiet
                }
            }
            group.addTask { try? await Task.sleep(for: deadline); return .answer(nil) }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if case .answer(let result) = next { return result }
            }
            return nil
        }
    }

    private func translate(_ failure: NodeFailure) -> AlarmctlError {
        guard case .node(.unavailable) = failure else { return AlarmctlError(failure) }
        if let problem = connectionProblems.value { return unreachable(problem) }
        if let status = connection.statusUpdates.value, !status.isOnline { return offlineError(status) }
        // Not connected: the connection's own message then says that the broker never completed the MQTT connection.
        guard connection.isConnectedToBroker, connection.statusUpdates.value == nil else { return AlarmctlError(failure) }
        return .unreachable("node '\(settings.node)' did not answer, and has no status on broker \(settings.brokerDescription): "
            + "check the node id (--node, ALARMD_NODE), the topic prefix (--prefix, ALARMD_PREFIX) and that alarmd runs with this broker")
    }
}

/// Keeps the MQTT client's warnings and errors as the session's connection problem, and writes the
/// whole log to `forwardTo` when there is one (`--verbose`).
struct ConnectionProblemLogHandler: StoredMetadataLogHandler {
    let problems: Broadcast<String?>
    var forwardTo: (any LogHandler)?
    var metadata: Logger.Metadata = [:] { didSet { forwardTo?.metadata = metadata } }
    var logLevel: Logger.Level

    init(problems: Broadcast<String?>, forwardTo: (any LogHandler)?) {
        self.problems = problems
        self.forwardTo = forwardTo
        logLevel = forwardTo == nil ? .warning : .debug
    }

    func log(event: LogEvent) {
        forwardTo?.log(event: event)
        guard event.level >= .warning else { return }
        if let error = event.metadata?["error"] {
            problems.send("\(error)")
        } else if event.level >= .error {
            // libmosquitto's own log ("Unable to load CA certificates, check cafile …") says what went wrong.
            let reason = (event.metadata?["mqtt.reason"] ?? event.metadata?["mosquitto.log"]).map { ": \($0)" } ?? ""
            problems.send("\(event.message)\(reason)")
        }
    }
}
