import AlarmKit
import AlarmctlCore
import Synchronization

/// The latest state of every node the companion shows, fed by a ``RemoteFleet`` (or by a test),
/// and followed by each page's event stream.
public final class CompanionHub: Sendable {
    /// Every node's status and alarms, by node id.
    public let nodes = Broadcast<[String: KnownNode]>([:])
    /// Why the companion has no news of the nodes, naming the broker; nil while it reaches it.
    public let brokerProblem = Broadcast<String?>(nil)
    private let brokerAddress: String

    /// - Parameter broker: the broker's address, `host:port`, for ``brokerProblem``.
    public init(broker: String = "") { brokerAddress = broker }

    /// Records a node that was found, before its status arrives.
    public func add(node: String) { change(node) { _ in } }

    /// Records a node's status. An offline status (the will, a clean shutdown) names no time
    /// zone: the last one known is kept, so its times stay in the node's zone.
    public func update(node: String, status: NodeStatus?) {
        change(node) { known in
            var status = status
            if status != nil, status?.timeZone == nil { status?.timeZone = known.status?.timeZone }
            known.status = status
        }
    }

    public func update(node: String, documents: [AlarmDocument]) { change(node) { ($0.previousDocuments, $0.documents) = ($0.documents, documents) } }

    /// Records an alert that nobody answered (`silenced`) or an alarm `missed` (at its due date),
    /// the last five; other events change nothing.
    public func record(node: String, event: AlarmEvent) {
        guard event.name == .silenced || event.name == .missed, let id = event.alarmID else { return }
        change(node) { known in
            let title = (known.documents + known.previousDocuments).first { $0.id == id }.map { AlarmText.title(of: $0) }
                ?? event.details["title"]?.string.map { AlarmText.printable($0) } ?? "An alarm"
            let at = event.details["alertDate"]?.string.flatMap(AlarmJSON.date(from:)) ?? event.at
            known.unanswered = Array(([.init(title: title, at: at, missed: event.name == .missed)] + known.unanswered).prefix(5))
        }
    }

    /// Records whether the companion reaches the broker; while it does not, every node is unknown.
    public func update(brokerConnected: Bool) {
        changeNodes { all in
            let problem = brokerConnected ? nil
                : "the companion cannot reach the broker \(brokerAddress): check that it runs and that --broker (or ALARMD_BROKER) names it"
            if brokerProblem.value != problem { brokerProblem.send(problem) }
            for node in all.keys { all[node]?.brokerLost = !brokerConnected }
        }
    }

    /// Ends every follower's stream (the pages' event streams), at shutdown.
    public func finish() {
        nodes.finish()
        brokerProblem.finish()
    }

    /// Follows every node of `fleet` (its status and alarms) until the fleet closes.
    public func follow(_ fleet: RemoteFleet) async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await connected in fleet.brokerConnected.stream() { self.update(brokerConnected: connected) }
            }
            var followed = Set<String>()
            for await connections in fleet.connections.stream() {
                for (node, connection) in connections where followed.insert(node).inserted {
                    add(node: node)
                    group.addTask {
                        for await status in connection.statusUpdates.stream() { self.update(node: node, status: status) }
                    }
                    group.addTask {
                        for await documents in connection.documentUpdates.stream() { self.update(node: node, documents: documents) }
                    }
                    group.addTask { for await event in connection.events() { self.record(node: node, event: event) } }
                }
            }
        }
    }

    /// One change at a time: `Broadcast` delivers in the senders' order, and the read-modify-send
    /// here is serialized by the lock so that no update is lost between two feeds.
    private let changes = Mutex(())

    private func changeNodes(_ body: (inout [String: KnownNode]) -> Void) {
        changes.withLock { _ in
            var all = nodes.value
            body(&all)
            if all != nodes.value { nodes.send(all) }
        }
    }

    /// Changes `node`; one found while the broker is lost is not known either.
    private func change(_ node: String, _ body: (inout KnownNode) -> Void) {
        changeNodes { all in body(&all[node, default: KnownNode(brokerLost: brokerProblem.value != nil)]) }
    }
}
