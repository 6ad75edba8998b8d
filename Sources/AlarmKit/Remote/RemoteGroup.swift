import FoundationEssentials
import Logging
import Mosquitto
import Synchronization

/// A group of nodes reached over MQTT, as ``RemoteNodeConnection`` reaches one node: a request goes
/// once to `<prefix>/groups/<group>/cmd/<operation>`, every member applies it as its own (with the
/// same alarm id), and the members' replies are collected for a while. Each request carries
/// `sentAt`, this machine's instant, from which the members count a timer, a snooze or a resumed
/// countdown: members whose clocks agree then ring together.
///
/// The members are known from their retained statuses (`<prefix>/+/status`), which list their
/// groups: a member that did not answer is reported as silent, with its last status. The
/// collection ends once every member that is online has answered, or after `settings.timeout`.
/// With no retained status from the broker, the members awaited are those that answered earlier
/// requests (none at first: then it waits `settings.timeout`).
///
/// Nothing runs until first use; `close()` ends the connection.
public final class RemoteGroup: Sendable {
    /// One member's answer.
    public struct MemberReply: Sendable, Hashable {
        public var node: String
        public var reply: NodeReply

        public init(node: String, reply: NodeReply) {
            self.node = node
            self.reply = reply
        }
    }

    /// What a request brought back.
    public struct Replies: Sendable, Hashable {
        /// The members that answered, ordered by node id.
        public var answered: [MemberReply]
        /// The members known from their status that did not answer, with that status.
        public var silent: [String: NodeStatus]
        /// False when the broker gave no node's retained status (RabbitMQ 3.10 keeps none for a
        /// wildcard subscription): a member that did not answer cannot be named in ``silent``.
        public var membersKnown: Bool

        public init(answered: [MemberReply], silent: [String: NodeStatus], membersKnown: Bool = true) {
            self.answered = answered
            self.silent = silent
            self.membersKnown = membersKnown
        }
    }

    public let settings: RemoteNodeSettings
    public let group: String

    private let topics: NodeTopics
    private let replyTopic: String
    private let logger: Logger
    private let state = Mutex(State())

    private struct State: RemoteClientState {
        var client: MQTTClient?
        var loop: Task<Void, Never>?
        var setupFailure: String?
        var members: [String: NodeStatus] = [:]
        /// Whether any node's status came as a retained message: then the members are known.
        var retainedStatusSeen = false
        /// The nodes that answered earlier requests: the members awaited when none is known.
        var respondents: Set<String> = []
        /// Requests collecting replies, by correlation id.
        var collectors: [String: AsyncStream<[UInt8]>.Continuation] = [:]
    }

    /// - Parameters:
    ///   - settings: the broker and topic prefix (`node` is not used).
    ///   - group: the group's name, `[A-Za-z0-9_-]` as node ids.
    public init(settings: RemoteNodeSettings, group: String,
                logger: Logger = .remoteClient("alarmkit.remote-group")) {
        self.settings = settings
        self.group = group
        self.topics = NodeTopics.group(group, prefix: settings.topicPrefix)
        self.replyTopic = settings.newReplyTopic()
        self.logger = logger
    }

    /// The members known so far from their retained statuses, by node id.
    public var members: [String: NodeStatus] {
        start()
        return state.withLock { $0.members }
    }

    /// Schedules the alarm `id` on every member.
    public func schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>) async throws(AlarmNodeError) -> Replies {
        try await request(.schedule, fields: try scheduleFields(id: id, configuration: configuration), alarmID: id)
    }

    /// Runs a lifecycle operation on alarm `id` on every member; a member without it answers `notFound`.
    public func perform(_ operation: AlarmOperation, id: UUID) async throws(AlarmNodeError) -> Replies {
        try await request(operation.command, fields: ["id": .string(id.uuidString)], alarmID: id)
    }

    /// Every member's alarms (the `list` command).
    public func list() async throws(AlarmNodeError) -> Replies { try await request(.list, fields: [:]) }

    /// Connects now (it also happens on first use).
    public func start() {
        let filters = [NodeTopics.statusFilter(prefix: settings.topicPrefix), replyTopic]
        state.startClient(settings: settings, filters: filters, logger: logger, owner: self) { owner, event in
            if case .message(let message) = event { owner.receive(message) }
        }
    }

    /// Disconnects.
    public func close() async {
        let (client, loop) = state.withLock { ($0.client, $0.loop) }
        await client?.disconnect()
        loop?.cancel()
    }

    // MARK: Internals

    private func request(_ operation: NodeCommand.Operation, fields: [String: JSONValue], alarmID: UUID? = nil) async throws(AlarmNodeError) -> Replies {
        start()
        let client = try state.requestClient(settings: settings)
        let correlation = UUID().uuidString
        var fields = fields
        // Every member counts a countdown from this instant, not from when the broker reached it.
        fields["sentAt"] = .string(AlarmJSON.string(from: Date()))
        let (replies, collector) = AsyncStream.makeStream(of: [UInt8].self)
        state.withLock { $0.collectors[correlation] = collector }
        defer { _ = state.withLock { $0.collectors.removeValue(forKey: correlation) } }
        let command = MQTTMessage.command(topic: topics.command(operation), fields: fields, replyTopic: replyTopic, correlation: correlation)
        do {
            try client.publish(command)
        } catch { throw .unavailable("the request could not be sent to group '\(group)': \(error)") }
        let answered = await collect(replies, collector: collector, alarmID: alarmID)
        // Still buffered if the broker was never reached: then it must never be, as the caller hears nobody answered.
        client.withdrawUnsent { $0.correlationData == command.correlationData }
        let answeredNodes = Set(answered.map(\.node))
        let (members, membersKnown) = state.withLock { state in
            state.respondents.formUnion(answeredNodes)
            return (state.members, state.retainedStatusSeen)
        }
        let silent = members.filter { !answeredNodes.contains($0.key) }
        if answered.isEmpty, !client.isConnected {
            throw .unavailable(client.connectionProblem.map(settings.connectionProblemMessage) ?? settings.brokerNotConnectedMessage(waited: settings.timeout))
        }
        return Replies(answered: answered.sorted { $0.node < $1.node }, silent: silent, membersKnown: membersKnown)
    }

    /// The replies until every online member has answered or `settings.timeout` has passed.
    private func collect(_ replies: AsyncStream<[UInt8]>, collector: AsyncStream<[UInt8]>.Continuation, alarmID: UUID?) async -> [MemberReply] {
        let limit = Task {
            try? await Task.sleep(for: settings.timeout)
            collector.finish()
        }
        defer { limit.cancel() }
        var answered: [String: MemberReply] = [:]
        for await payload in replies {
            struct Sender: Decodable { var node: String }
            guard let node = try? AlarmJSON.decoder.decode(Sender.self, from: Data(payload)).node else { continue }
            let reply = (try? NodeReply.decode(payload, alarmID: alarmID))
                ?? .failure(NodeFailure(code: .internal, message: "the reply of node '\(node)' could not be read"))
            answered[node] = MemberReply(node: node, reply: reply)
            let (members, known, respondents) = state.withLock { ($0.members, $0.retainedStatusSeen, $0.respondents) }
            let awaited = known ? Set(members.filter { $0.value.isOnline }.keys) : respondents
            if !awaited.isEmpty, awaited.allSatisfy({ answered[$0] != nil }) { break }
        }
        return Array(answered.values)
    }

    private func receive(_ message: MQTTMessage) {
        if message.topic == replyTopic {
            guard let correlation = message.replyCorrelation,
                  let collector = state.withLock({ $0.collectors[correlation] }) else { return }
            collector.yield(message.payload)
        } else if let node = NodeTopics.nodeID(inStatusTopic: message.topic, prefix: settings.topicPrefix) {
            let status = message.payload.isEmpty ? nil : try? AlarmJSON.decoder.decode(NodeStatus.self, from: Data(message.payload))
            let member = status?.groups?.contains(group) == true ? status : nil
            state.withLock { ($0.members[node], $0.retainedStatusSeen) = (member, $0.retainedStatusSeen || message.retain) }
        }
    }
}

extension AlarmManager {
    /// The group `group` on the broker of `settings` (`ALARMD_BROKER` and the rest by default):
    /// requests go to every member, and each member's reply comes back.
    public static func group(_ group: String, settings: RemoteNodeSettings = .fromEnvironment()) -> RemoteGroup {
        RemoteGroup(settings: settings, group: group)
    }
}
