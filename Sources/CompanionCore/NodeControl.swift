import AlarmKit
import Foundation

/// What the page's actions do to the nodes, once checked: lifecycle operations, and new alarms
/// from the command line's human syntax.
public protocol NodeControl: Sendable {
    /// Runs `operation` on alarm `id` of `node`.
    func perform(_ operation: AlarmOperation, node: String, id: UUID) async throws(CompanionError)
    /// Schedules the timer or alarm that `text` describes (`10m Tea`, `07:00 weekdays Work`) on `node`.
    func schedule(_ text: String, node: String) async throws(CompanionError)
}

/// The nodes of a ``RemoteFleet``, over MQTT: the node's refusals come back in its words.
public struct FleetControl: NodeControl {
    public let fleet: RemoteFleet

    public init(fleet: RemoteFleet) {
        self.fleet = fleet
    }

    public func perform(_ operation: AlarmOperation, node: String, id: UUID) async throws(CompanionError) {
        let connection = try connection(node)
        do {
            _ = try await connection.performReturningDocument(operation, id: id)
        } catch {
            throw CompanionError(node: NodeFailure(error))
        }
    }

    public func schedule(_ text: String, node: String) async throws(CompanionError) {
        let connection = try connection(node)
        let zone = connection.statusUpdates.value?.timeZone.flatMap(TimeZone.init(identifier:)) ?? .current
        let configuration = try NewAlarmText.configuration(text, timeZone: zone)
        do {
            _ = try await connection.schedule(id: UUID(), configuration: configuration)
        } catch {
            throw CompanionError(node: NodeFailure(error))
        }
    }

    private func connection(_ node: String) throws(CompanionError) -> RemoteNodeConnection {
        guard let connection = fleet.connection(to: node) else { throw .unknownNode(node) }
        return connection
    }
}
