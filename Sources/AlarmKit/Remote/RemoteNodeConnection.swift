import FoundationEssentials
import Logging
import Mosquitto
import OrderedCollections
import Synchronization

/// Where a remote node is and how to reach it.
public struct RemoteNodeSettings: Sendable, Hashable {
    /// Which MQTT version to speak: `auto` (MQTT 5, falling back to 3.1.1 when the broker refuses
    /// or drops it), `5` or `3.1.1`.
    public typealias BrokerProtocol = MQTTProtocolSetting

    public var host: String
    public var port: Int
    public var node: String
    public var topicPrefix: String
    public var username: String?
    public var password: String?
    /// The CA certificate that signed the broker's; setting it turns TLS on.
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var tlsInsecure: Bool
    /// How long a request waits for the node's reply.
    public var timeout: Duration
    public var brokerProtocol: BrokerProtocol
    /// Why the environment's settings cannot be used (``fromEnvironment(_:)``): requests fail with it.
    public var environmentProblem: String?
    /// Where these settings were written, so that an error names what to change there.
    public var origin: Origin = .code

    public init(host: String = "localhost", port: Int = 1883, node: String, topicPrefix: String = "alarmd",
                username: String? = nil, password: String? = nil, caFile: String? = nil, certFile: String? = nil,
                keyFile: String? = nil, tlsInsecure: Bool = false, timeout: Duration = .seconds(5),
                brokerProtocol: BrokerProtocol = .auto) {
        self.host = host
        self.port = port
        self.node = node
        self.topicPrefix = topicPrefix
        self.username = username
        self.password = password
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.tlsInsecure = tlsInsecure
        self.timeout = timeout
        self.brokerProtocol = brokerProtocol
    }

    /// Where settings were written: in the app's code (the default), in `ALARMD_*` environment
    /// variables (``fromEnvironment(_:)``), or on a command line over them (alarmctl, the companion).
    public enum Origin: Sendable, Hashable { case code, environment, commandLine }

    /// A group of settings an error can ask to check.
    enum Setting { case broker, credentials, tls, node }

    /// How `setting` is written where these settings come from.
    func name(of setting: Setting) -> String {
        let (properties, variables, flags) = switch setting {
        case .broker: ("host and port", "ALARMD_BROKER", "--broker")
        case .credentials: ("username and password", "ALARMD_USERNAME and ALARMD_PASSWORD", "--username and --password")
        case .tls: ("caFile, certFile and keyFile", "ALARMD_CA_FILE", "--ca-file, --cert-file and --key-file")
        case .node: ("node", "ALARMD_NODE", "--node")
        }
        return switch origin {
        case .code: "RemoteNodeSettings' \(properties)"
        case .environment: variables
        case .commandLine: "\(flags) or \(variables)"
        }
    }

    /// The settings named by the environment: `ALARMD_BROKER` (`host:port`, default
    /// `localhost:1883`), `ALARMD_NODE` (default: this host's name), `ALARMD_PREFIX`,
    /// `ALARMD_USERNAME`, `ALARMD_PASSWORD`, `ALARMD_CA_FILE`, `ALARMD_BROKER_PROTOCOL` (`auto`,
    /// `5` or `3.1.1`). A malformed `ALARMD_BROKER` or `ALARMD_BROKER_PROTOCOL` is
    /// ``environmentProblem``, never another broker or protocol.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Self {
        var settings = Self(node: environment["ALARMD_NODE"] ?? NodeTopics.nodeID(fromHostName: ProcessInfo.processInfo.hostName))
        settings.origin = .environment
        if let broker = environment["ALARMD_BROKER"] {
            if let (host, port) = parseBroker(broker) {
                (settings.host, settings.port) = (host, port)
            } else {
                settings.environmentProblem = malformedBrokerMessage(broker, source: "ALARMD_BROKER")
            }
        }
        if let prefix = environment["ALARMD_PREFIX"] { settings.topicPrefix = prefix }
        settings.username = environment["ALARMD_USERNAME"]
        settings.password = environment["ALARMD_PASSWORD"]
        settings.caFile = environment["ALARMD_CA_FILE"]
        if let text = environment["ALARMD_BROKER_PROTOCOL"] {
            if let setting = BrokerProtocol(rawValue: text) { settings.brokerProtocol = setting } else {
                settings.environmentProblem = settings.environmentProblem ?? "ALARMD_BROKER_PROTOCOL '\(text)' is not a protocol: write \(BrokerProtocol.choices)"
            }
        }
        return settings
    }

    /// Reads `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address, each also written as
    /// other MQTT tools do (`mqtt://host:port`); nil when malformed (another scheme, such as
    /// `mqtts://`, whose TLS is set apart; a space; a port outside 1…65535), so that a typo is
    /// refused rather than looked up.
    public static func parseBroker(_ written: String) -> (String, Int)? {
        let text = written.hasPrefix("mqtt://") ? String(written.dropFirst(7).dropLast(written.hasSuffix("/") ? 1 : 0)) : written
        if text.filter({ $0 == ":" }).count > 1, text.allSatisfy({ $0.isHexDigit || $0 == ":" }) { return (text, 1883) }
        let bracketed = text.hasPrefix("[")
        guard let hostEnd = bracketed ? text.firstIndex(of: "]") : text.firstIndex(of: ":") ?? text.endIndex else { return nil }
        let host = text[text.index(text.startIndex, offsetBy: bracketed ? 1 : 0)..<hostEnd]
        let rest = text[(bracketed ? text.index(after: hostEnd) : hostEnd)...]
        let punctuation = bracketed ? ":.%" : "-._"
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || punctuation.contains($0)) }) else { return nil }
        guard !rest.isEmpty else { return (String(host), 1883) }
        guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65_535).contains(port) else { return nil }
        return (String(host), port)
    }

    /// Why `text`, from `source`, is not a broker address, and how to write one.
    public static func malformedBrokerMessage(_ text: String, source: String) -> String {
        "\(source) '\(text)' is not a broker address: write HOST, HOST:PORT or [IPv6]:PORT, e.g. 127.0.0.1:1883 (or mqtt://127.0.0.1:1883; TLS is set apart, not with mqtts://)"
    }

    /// `host:port`, as messages name the broker.
    public var brokerDescription: String { "\(host):\(port)" }

    /// Why nothing came back within `waited` while the MQTT connection never came up, although
    /// the MQTT client reported no failure: whatever listens at the address (if the TCP connection
    /// was made at all) did not answer the MQTT CONNECT.
    public func brokerNotConnectedMessage(waited: Duration) -> String {
        "\(brokerDescription) did not complete the MQTT connection within \(waited) (no CONNACK): it may not be an MQTT broker, "
            + "or the network drops the connection; check that this host and port are the broker's MQTT listener (\(name(of: .broker)))"
    }

    /// A connection problem the MQTT client reported, with the settings that may fix it.
    public func connectionProblemMessage(_ problem: String) -> String {
        let settingsToCheck = if problem.contains("username") || problem.contains("not authori") {
            name(of: .credentials)
        } else if ["TLS failed", "tls", "certificate", "keyfile"].contains(where: problem.contains) {
            // The MQTT client's TLS failures ("TLS failed while …") and TLS settings ("tls.caFile …");
            // a word of advice naming TLS ("not an HTTP, websockets or TLS port") is no TLS failure.
            name(of: .tls)
        } else {
            name(of: .broker)
        }
        return "\(problem) [\(settingsToCheck)]"
    }

    /// The MQTT client's configuration for these settings, with a client id of its own.
    func mqttConfiguration() -> MQTTConfiguration {
        let tls = caFile.map { MQTTConfiguration.TLS(caFile: $0, certFile: certFile, keyFile: keyFile, insecure: tlsInsecure) }
        return MQTTConfiguration(host: host, port: port, clientID: "alarmkit-\(UUID().uuidString.prefix(13))",
                                 username: username, password: password, tls: tls, keepAlive: 15, protocolSetting: brokerProtocol)
    }

    /// A reply topic of a client's own: `<prefix>-clients/<random id>/reply` (docs/mqtt.md).
    func newReplyTopic() -> String { "\(topicPrefix)-clients/\(UUID().uuidString)/reply" }
}

/// A node reached over MQTT: requests go to `<base>/cmd/<operation>` and wait for the reply;
/// the alarms and the authorization decision mirror the node's retained topics.
///
/// Nothing runs until first use: the connection and its message loop start with the first
/// request or observation, and `close()` ends them.
public final class RemoteNodeConnection: AlarmNodeConnection {
    public let settings: RemoteNodeSettings
    /// The node's alarms, from its retained documents once they are all in (as many as its status
    /// counts); observing connects.
    public var documentUpdates: Broadcast<[AlarmDocument]> { start(); return documents }
    /// The authorization decision, once the node's status has named it; observing connects.
    public var authorizationUpdates: Broadcast<AlarmManager.AuthorizationState> { start(); return authorization }
    /// The node's status as last published; nil until it is known. Observing connects.
    public var statusUpdates: Broadcast<NodeStatus?> { start(); return statuses }

    private let documents = Broadcast<[AlarmDocument]>(unknown: [])
    private let authorization = Broadcast<AlarmManager.AuthorizationState>(unknown: .notDetermined)
    private let statuses = Broadcast<NodeStatus?>(nil)

    private let topics: NodeTopics
    private let replyTopic: String
    private let logger: Logger
    private let state = Mutex(State())

    private struct State: RemoteClientState {
        var client: MQTTClient?
        var loop: Task<Void, Never>?
        var pending: [String: AwaitedAnswer<[UInt8]>] = [:]
        var mirror = RetainedAlarmMirror()
        /// The `list` the mirror asked for, while it runs.
        var listFetch: Task<Void, Never>?
        var closed = false
        /// Present until the first request, which alone waits for the node's status.
        var firstRequest: Void? = ()
        var setupFailure: String?
        var eventObservers: [UUID: AsyncStream<AlarmEvent>.Continuation] = [:]
    }

    public init(settings: RemoteNodeSettings, logger: Logger = .remoteClient("alarmkit.remote")) {
        self.settings = settings
        self.topics = NodeTopics(prefix: settings.topicPrefix, node: settings.node)
        self.replyTopic = settings.newReplyTopic()
        self.logger = logger
    }

    // MARK: AlarmNodeConnection

    public func schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>) async throws -> AlarmDocument {
        let fields = try scheduleFields(id: id, configuration: configuration)
        let reply = try await request(.schedule, fields: fields, alarmID: id, mayPrompt: true)
        guard case .alarm(let document?) = reply else { throw AlarmNodeError.internal("the node answered schedule without the alarm") }
        return document
    }

    public func perform(_ operation: AlarmOperation, id: UUID) async throws { _ = try await performReturningDocument(operation, id: id) }

    public func requestAuthorization() async throws -> AlarmManager.AuthorizationState {
        let reply = try await request(.requestAuthorization, fields: [:], mayPrompt: true)
        guard case .authorization(let decision) = reply else { throw AlarmNodeError.internal("the node answered requestAuthorization without a decision") }
        authorization.sendIfChanged(decision)
        return decision
    }

    /// The node's retained status, waiting for it up to `limit` (the settings' timeout when nil);
    /// nil when none came.
    public func status(within limit: Duration? = nil) async -> NodeStatus? {
        let statuses = statusUpdates
        return await withTaskGroup(of: NodeStatus?.self) { group in
            group.addTask { for await case let status? in statuses.stream() { return status }; return nil }
            group.addTask { [limit = limit ?? settings.timeout] in try? await Task.sleep(for: limit); return nil }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }

    public func currentDocuments() throws(AlarmNodeError) -> [AlarmDocument] {
        start()
        guard state.withLock({ $0.mirror.isKnown }) else {
            if let problem = settings.environmentProblem { throw .unavailable(problem) }
            let noStatus = statuses.value == nil
                ? " (no status from it on broker \(settings.brokerDescription) yet: if this lasts, check the node id, \(settings.name(of: .node)))" : ""
            throw .unavailable("the alarms of node '\(settings.node)' are not known yet\(noStatus): use fetchAlarmDocuments(), or wait for alarmUpdates")
        }
        return documents.value
    }

    // MARK: Remote-only calls

    /// Runs a lifecycle operation and returns the alarm as the node's reply shows it after the
    /// operation: nil when the operation removed it (cancel, stop of a one-shot alarm).
    public func performReturningDocument(_ operation: AlarmOperation, id: UUID) async throws -> AlarmDocument? {
        guard case .alarm(let document) = try await request(operation.command, fields: ["id": .string(id.uuidString)], alarmID: id) else {
            throw AlarmNodeError.internal("the node answered \(operation.rawValue) without the alarm")
        }
        return document
    }

    /// Asks the node for its alarms (the `list` command) and returns them.
    public func fetchDocuments() async throws -> [AlarmDocument] {
        state.withLock { $0.mirror.listAsked() }
        guard case .alarms(let documents) = try await request(.list, fields: [:]) else {
            throw AlarmNodeError.internal("the node answered list without alarms")
        }
        // The mirror took the list in already, in order with the documents around it (`receive`).
        return documents
    }

    /// The node's events from now on (`<base>/events`), for as long as the stream is iterated.
    public func events() -> AsyncStream<AlarmEvent> {
        start()
        let (stream, continuation) = AsyncStream.makeStream(of: AlarmEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        // After close() the stream ends at once, as the other updates' do: nothing would end it later.
        let closed = state.withLock { state in
            if !state.closed { state.eventObservers[id] = continuation }
            return state.closed
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.eventObservers.removeValue(forKey: id) } }
        return stream
    }

    /// Whether the MQTT connection to the broker is up (its CONNACK came, and it has not been lost since).
    public var isConnectedToBroker: Bool { state.withLock { $0.client?.isConnected ?? false } }

    /// Connects now (it also happens on first use), unless ``close()`` was called.
    public func start() {
        guard !state.withLock({ $0.closed }) else { return }
        let filters = [topics.alarmsFilter, topics.status, topics.events, replyTopic]
        state.startClient(settings: settings, filters: filters, logger: logger, owner: self) { owner, event in
            switch event {
            case .message(let message): owner.receive(message)
            case .disconnected: owner.state.withLock { $0.mirror.subscriptionLost() }
            case .connected: break
            }
        }
    }

    /// Disconnects and ends every stream.
    public func close() async {
        let (client, loop, fetch, observers, pending) = state.withLock { state in
            defer { (state.eventObservers, state.closed) = ([:], true) }
            return (state.client, state.loop, state.listFetch, Array(state.eventObservers.values), Array(state.pending.values))
        }
        // A request waiting for its reply fails now rather than when its time is up.
        pending.forEach { $0.end() }
        fetch?.cancel()
        await client?.disconnect()
        loop?.cancel()
        observers.forEach { $0.finish() }
        documents.finish()
        authorization.finish()
        statuses.finish()
    }

    // MARK: Internals

    /// Sends a command, unless the node's status says it is offline, and waits for the reply: for
    /// the settings' timeout or, when the node may prompt (`mayPrompt`, and its status says its
    /// authorization is undetermined or is not known), as long as the prompt takes.
    private func request(
        _ operation: NodeCommand.Operation, fields: [String: JSONValue], alarmID: UUID? = nil, mayPrompt: Bool = false
    ) async throws -> NodeReply {
        start()
        let closedError = AlarmNodeError.unavailable("the request could not be sent to node '\(settings.node)': the connection is closed")
        // Before the client is asked for: a connection closed before its first use has none.
        if state.withLock({ $0.closed }) { throw closedError }
        let client = try state.requestClient(settings: settings)
        // The first request waits a little for the retained status (within its time), which may be
        // on its way. A broker that keeps none for this client (another node of a RabbitMQ cluster,
        // docs/fleet.md) or a mistyped node id sends none: requests then go without it.
        let asked = ContinuousClock.now
        let isFirst = state.withLock { $0.firstRequest.take() != nil }
        let status = isFirst ? await status(within: min(settings.timeout / 2, .seconds(2))) : statuses.value
        if let status, !status.isOnline { throw offlineError }
        let correlation = UUID().uuidString
        let message = MQTTMessage.command(topic: topics.command(operation), fields: fields, replyTopic: replyTopic, correlation: correlation)
        let limit = NodeStatus.replyWait(status, mayPrompt: mayPrompt, brokerReachable: client.isConnected, timeout: settings.timeout)
        // Registered before the request is sent, so that the quickest reply finds its waiter; then
        // close() ends its wait, and one that came before (during the status wait) refuses it.
        let pending = AwaitedAnswer<[UInt8]>()
        state.withLock { $0.pending[correlation] = pending }
        defer { state.withLock { _ = $0.pending.removeValue(forKey: correlation) } }
        if state.withLock({ $0.closed }) { throw closedError }
        do {
            try client.publish(message)
        } catch {
            throw AlarmNodeError.unavailable("the request could not be sent to node '\(settings.node)': \(error)")
        }
        let answer = await pending.wait(atMost: limit - asked.duration(to: .now)) { try await Task.sleep(for: $0) }
        guard let answer else {
            // Still buffered if the broker was never reached: then it must never be, as the caller hears it failed.
            client.withdrawUnsent { $0.correlationData == message.correlationData }
            throw unavailableError(operation, client: client, waited: limit)
        }
        switch Result(catching: { try NodeReply.decode(answer, alarmID: alarmID) }) {
        case .failure(let error): throw AlarmNodeError.internal("the node's reply could not be read: \(error)")
        case .success(.failure(.node(.unauthorized))):
            // A reply's `unauthorized` does not carry the decision; the node's status does.
            throw AlarmNodeError.unauthorized(authorization.value)
        case .success(.failure(let failure)): throw failure.error
        case .success(let reply): return reply
        }
    }

    private var offlineError: AlarmNodeError {
        .unavailable("node '\(settings.node)' is offline: start alarmd on it, or check the node name (\(settings.name(of: .node)))")
    }

    private func unavailableError(_ operation: NodeCommand.Operation, client: MQTTClient, waited: Duration) -> AlarmNodeError {
        if state.withLock({ $0.closed }) { return .unavailable("node '\(settings.node)' had not answered when the connection was closed: it may still carry the request out") }
        if !client.isConnected {
            return .unavailable(client.connectionProblem.map(settings.connectionProblemMessage) ?? settings.brokerNotConnectedMessage(waited: waited))
        }
        if let status = statuses.value, !status.isOnline { return offlineError }
        // Only a schedule is safe to send again as it was; the others may find the alarm changed.
        let retry = operation == .schedule ? "so retry a schedule with the same id (which then changes nothing)" : "so look at the alarm before you retry"
        return .unavailable("node '\(settings.node)' did not answer within \(waited): it may still carry the request out, \(retry); "
            + "check that alarmd runs with this node id and broker (\(settings.name(of: .node)))")
    }

    private func receive(_ message: MQTTMessage) {
        if message.topic == replyTopic {
            // A list is applied here, before its requester wakes: applied later, it could
            // overwrite a document that came after it.
            if case .alarms(let list)? = try? NodeReply.decode(message.payload) {
                documents.sendIfChanged(state.withLock { $0.mirror.replace(with: list) })
            }
            guard let correlation = message.replyCorrelation,
                  let waiting = state.withLock({ $0.pending.removeValue(forKey: correlation) }) else { return }
            waiting.answer(message.payload)
        } else if let id = topics.alarmID(inTopic: message.topic) {
            let document = message.payload.isEmpty ? nil : try? AlarmJSON.decoder.decode(AlarmDocument.self, from: Data(message.payload))
            let outcome = state.withLock { $0.mirror.received(document, id: id, retained: message.retain) }
            if let list = outcome.list { documents.sendIfChanged(list) }
        } else if message.topic == topics.status {
            guard let status = try? AlarmJSON.decoder.decode(NodeStatus.self, from: Data(message.payload)) else { return }
            let outcome = state.withLock { $0.mirror.received(status, retained: message.retain) }
            // The list first: an observer that waits for the status then finds it whole.
            if let list = outcome.list { documents.sendIfChanged(list) }
            if outcome.askForList {
                // Off the message loop, which brings the answer; close() cancels it.
                let fetch = Task { [weak self] in
                    do { _ = try await self?.fetchDocuments() } catch {
                        guard let self, !Task.isCancelled else { return }
                        let (missing, outcome) = state.withLock { ($0.mirror.isMissingDocuments, $0.mirror.listUnanswered()) }
                        // Only documents missing make it worth a warning (alarmctl watch shows warnings).
                        logger.log(level: missing ? .warning : .debug, "alarm list not fetched; showing the documents that came",
                                   metadata: ["error": "\(error)"])
                        if let list = outcome.list { documents.sendIfChanged(list) }
                    }
                }
                state.withLock { $0.listFetch = fetch }
            }
            statuses.send(status)
            // An offline status names no decision: the last known one stands.
            authorization.sendIfChanged(status.authorization ?? authorization.value)
        } else if message.topic == topics.events {
            guard let event = try? AlarmJSON.decoder.decode(AlarmEvent.self, from: Data(message.payload)) else { return }
            for observer in state.withLock({ Array($0.eventObservers.values) }) { observer.yield(event) }
        }
    }
}

extension AlarmManager {
    /// The node named by the environment (`ALARMD_BROKER`, `ALARMD_NODE`; default
    /// `localhost:1883` and this host's name), as AlarmKit's `AlarmManager.shared` is the system's.
    public static let shared = AlarmManager(remote: .fromEnvironment())

    /// A manager for the node that `settings` name, over MQTT; `logger` gets the connection's
    /// messages (by default only its warnings and errors are logged).
    public convenience init(remote settings: RemoteNodeSettings, logger: Logger = .remoteClient("alarmkit.remote")) {
        self.init(connection: RemoteNodeConnection(settings: settings, logger: logger))
    }

    /// Asks the node for its current alarms (a `list` request for remote nodes).
    public func fetchAlarmDocuments() async throws -> [AlarmDocument] {
        if let remote = connection as? RemoteNodeConnection { return try await remote.fetchDocuments() }
        return try connection.currentDocuments()
    }
}
