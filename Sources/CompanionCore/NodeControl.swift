import AlarmKit
import Foundation
import Synchronization

/// What the page's actions do to the nodes, once checked: lifecycle operations, and new alarms
/// from the command line's human syntax.
public protocol NodeControl: Sendable {
    /// Runs `operation` on alarm `id` of `node`.
    func perform(_ operation: AlarmOperation, node: String, id: UUID) async throws(CompanionError)
    /// Runs `operation` on alarm `id` of every member of `group` (one command to the group).
    func perform(_ operation: AlarmOperation, group: String, id: UUID) async throws(CompanionError)
    /// Schedules the timer or alarm that `text` describes (`10m Tea`, `07:00 weekdays Work`) on `node`.
    func schedule(_ text: String, node: String) async throws(CompanionError)
}

/// The nodes of a ``RemoteFleet``, over MQTT: the node's refusals come back in its words. A
/// group's action goes to the group's command topic through a ``RemoteGroup`` (one per group,
/// connected on first use), so that every member acts, from the same `sentAt`.
public final class FleetControl: NodeControl {
    public let fleet: RemoteFleet
    private let groups = Mutex<[String: RemoteGroup]>([:])

    public init(fleet: RemoteFleet) { self.fleet = fleet }

    public func perform(_ operation: AlarmOperation, node: String, id: UUID) async throws(CompanionError) {
        let connection = try connection(node)
        _ = try await Self.relayingRefusal { try await connection.performReturningDocument(operation, id: id) }
    }

    public func perform(_ operation: AlarmOperation, group: String, id: UUID) async throws(CompanionError) {
        let connection = groups.withLock { groups in
            let connection = groups[group] ?? RemoteGroup(settings: fleet.settings, group: group)
            groups[group] = connection
            return connection
        }
        let replies = try await Self.relayingRefusal { try await connection.perform(operation, id: id) }
        try Self.check(replies, group: group)
    }

    /// A group's action succeeded when a member applied it: the others hold the alarm in another
    /// state (a member whose alert was already stopped) or not at all. When none did, the first
    /// refusal is said in its member's words.
    static func check(_ replies: RemoteGroup.Replies, group: String) throws(CompanionError) {
        var refusal: (node: String, failure: NodeFailure)?
        for member in replies.answered {
            guard case .failure(let failure) = member.reply else { return }
            refusal = refusal ?? (member.node, failure)
        }
        guard let refusal else {
            throw CompanionError(code: "unavailable", status: .serviceUnavailable,
                                 message: "no member of group '\(group)' answered: check that its nodes are running and reach the broker")
        }
        var error = CompanionError(node: refusal.failure)
        error.message = "\(refusal.node): \(error.message)"
        throw error
    }

    public func schedule(_ text: String, node: String) async throws(CompanionError) {
        let connection = try connection(node)
        let zone = connection.statusUpdates.value?.timeZone.flatMap(TimeZone.init(identifier:)) ?? .current
        let configuration = try NewAlarmText.configuration(text, timeZone: zone)
        _ = try await Self.relayingRefusal { try await connection.schedule(id: UUID(), configuration: configuration) }
    }

    /// Runs `body`; what it throws is said in the node's words (``NodeFailure``).
    private static func relayingRefusal<Value>(_ body: () async throws -> Value) async throws(CompanionError) -> Value {
        do { return try await body() } catch { throw CompanionError(node: NodeFailure(error)) }
    }

    /// Disconnects the groups' connections (the fleet's own are closed by the fleet).
    public func close() async { for group in groups.withLock({ Array($0.values) }) { await group.close() } }

    private func connection(_ node: String) throws(CompanionError) -> RemoteNodeConnection {
        guard let connection = fleet.connection(to: node) else { throw .unknownNode(node) }
        return connection
    }
}
