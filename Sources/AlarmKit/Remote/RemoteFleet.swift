import Logging
import Mosquitto
import Synchronization

/// Every node under a topic prefix, or the nodes chosen, each as a ``RemoteNodeConnection``: a
/// display's view of a house's nodes, as ``RemoteNodeConnection`` is a single app's view of one.
///
/// Without chosen nodes it watches `<prefix>/+/status` and adds a connection for each node that
/// publishes a status (online or offline); a node is never removed, so an offline node stays known.
public final class RemoteFleet: Sendable {
    /// The settings every connection uses; their `node` is replaced by each node's id.
    public let settings: RemoteNodeSettings
    /// The nodes chosen at start-up; nil means every node under the prefix.
    public let chosenNodes: [String]?
    /// The nodes known so far, by id.
    public let connections = Broadcast<[String: RemoteNodeConnection]>([:])
    /// Whether the fleet's own connection to the broker is up: while it is down, no node's
    /// status or alarms can be trusted to be current.
    public let brokerConnected = Broadcast<Bool>(false)

    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var discovery: MQTTClient?
        var loop: Task<Void, Never>?
        var closed = false
    }

    /// - Parameter nodes: the node ids to show; nil or empty for every node under `settings.topicPrefix`.
    public init(settings: RemoteNodeSettings, nodes: [String]? = nil, logger: Logger = .remoteClient("alarmkit.fleet")) {
        self.settings = settings
        self.chosenNodes = nodes.flatMap { $0.isEmpty ? nil : $0 }
        self.logger = logger
    }

    /// The connection to `node`, when it is known.
    public func connection(to node: String) -> RemoteNodeConnection? { connections.value[node] }

    /// Connects the chosen nodes, or starts watching for nodes under the prefix; either way a
    /// client of its own follows the broker connection (``brokerConnected``).
    public func start() throws(AlarmNodeError) {
        chosenNodes?.forEach(add)
        let client: MQTTClient
        do throws(MQTTError) {
            client = try MQTTClient(configuration: settings.mqttConfiguration(), logger: logger)
            if chosenNodes == nil { try client.subscribe(NodeTopics.statusFilter(prefix: settings.topicPrefix), qos: 1) }
            try client.connect()
        } catch { throw .unavailable("cannot set up a connection to the broker \(settings.brokerDescription): \(error)") }
        let prefix = settings.topicPrefix
        // One task reads the client's events, so nodes are added one at a time.
        let loop = Task { [weak self] in
            for await event in client.events {
                switch event {
                case .connected: self?.brokerConnected.send(true)
                case .disconnected: self?.brokerConnected.send(false)
                case .message(let message):
                    guard !message.payload.isEmpty, let node = NodeTopics.nodeID(inStatusTopic: message.topic, prefix: prefix) else { continue }
                    self?.add(node)
                }
            }
        }
        state.withLock { ($0.discovery, $0.loop) = (client, loop) }
    }

    /// Disconnects every connection and ends the streams.
    public func close() async {
        let (client, loop) = state.withLock { state in
            state.closed = true
            return (state.discovery, state.loop)
        }
        await client?.disconnect()
        loop?.cancel()
        for connection in connections.value.values { await connection.close() }
        connections.finish()
        brokerConnected.finish()
    }

    private func add(_ node: String) {
        guard !state.withLock({ $0.closed }), connections.value[node] == nil else { return }
        var nodeSettings = settings
        nodeSettings.node = node
        let connection = RemoteNodeConnection(settings: nodeSettings, logger: logger)
        connections.send(connections.value.merging([node: connection]) { $1 })
        connection.start()
        logger.info("node found", metadata: ["node": "\(node)"])
    }
}
