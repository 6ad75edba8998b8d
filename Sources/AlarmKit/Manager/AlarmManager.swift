import FoundationEssentials

/// Where an `AlarmManager` sends its calls: a node in this process, or one over MQTT.
public protocol AlarmNodeConnection: Sendable {
    func schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>) async throws -> AlarmDocument
    func perform(_ operation: AlarmOperation, id: UUID) async throws
    func requestAuthorization() async throws -> AlarmManager.AuthorizationState
    /// The node's alarms as last known; throws when they are not known (e.g. never connected).
    func currentDocuments() throws -> [AlarmDocument]
    var documentUpdates: Broadcast<[AlarmDocument]> { get }
    var authorizationUpdates: Broadcast<AlarmManager.AuthorizationState> { get }
}

/// Schedules and controls alarms, as AlarmKit's `AlarmManager` does.
///
/// It works against a node in this process (`AlarmManager(node:)`) or against a running alarmd
/// over MQTT (`AlarmManager.shared`, `AlarmManager(remote:)`), with the same calls.
public final class AlarmManager: Sendable {
    let connection: any AlarmNodeConnection

    /// A manager for any connection to a node.
    public init(connection: any AlarmNodeConnection) { self.connection = connection }

    /// A manager for a node running in this process.
    public convenience init(node: LocalAlarmNode) { self.init(connection: node) }

    /// Schedules an alarm, or replaces the one with this id; returns it.
    ///
    /// - Throws: `AlarmError.maximumLimitReached` when the node is full, or an ``AlarmNodeError``
    ///   (`invalidConfiguration`, `unauthorized`, `unavailable`, …). The other calls throw
    ///   ``AlarmNodeError``s.
    @discardableResult
    public func schedule<Metadata: AlarmMetadata>(
        id: Alarm.ID, configuration: AlarmConfiguration<Metadata>
    ) async throws -> Alarm {
        let erased: AlarmConfiguration<JSONValue>
        do {
            erased = try configuration.erased()
        } catch {
            throw AlarmNodeError.invalidConfiguration(field: "configuration.attributes.metadata",
                                                  reason: "cannot be written as JSON: \(error)")
        }
        return try await connection.schedule(id: id, configuration: erased).alarm
    }

    /// Removes an alarm in any state.
    public func cancel(id: Alarm.ID) async throws { try await connection.perform(.cancel, id: id) }

    /// Stops an alerting alarm.
    public func stop(id: Alarm.ID) async throws { try await connection.perform(.stop, id: id) }

    /// Starts the post-alert countdown of an alerting alarm (snooze, or repeat for a timer).
    public func countdown(id: Alarm.ID) async throws { try await connection.perform(.countdown, id: id) }

    /// Pauses a running countdown.
    public func pause(id: Alarm.ID) async throws { try await connection.perform(.pause, id: id) }

    /// Resumes a paused countdown.
    public func resume(id: Alarm.ID) async throws { try await connection.perform(.resume, id: id) }

    /// Every alarm of the node.
    public var alarms: [Alarm] { get throws { try connection.currentDocuments().map(\.alarm) } }

    /// The alarms each time they change, starting with the current list. Any number of
    /// observers may iterate at once.
    public var alarmUpdates: AlarmUpdates { AlarmUpdates(values: connection.documentUpdates) { $0.map(\.alarm) } }

    /// Every alarm's full document (configuration, presentation state, next alert date).
    public var alarmDocuments: [AlarmDocument] { get throws { try connection.currentDocuments() } }

    /// The full documents each time they change, starting with the current list.
    public var alarmDocumentUpdates: AsyncStream<[AlarmDocument]> { connection.documentUpdates.stream() }

    /// Whether the node lets apps schedule alarms.
    public var authorizationState: AuthorizationState { connection.authorizationUpdates.value }

    /// Asks the node for authorization (it prompts on its hardware) and returns the decision.
    public func requestAuthorization() async throws -> AuthorizationState { try await connection.requestAuthorization() }

    /// The authorization decision each time it changes, starting with the current one.
    public var authorizationUpdates: AlarmAuthorizationStateUpdates {
        AlarmAuthorizationStateUpdates(values: connection.authorizationUpdates) { $0 }
    }
}

/// A node in this process is its own connection.
extension LocalAlarmNode: AlarmNodeConnection {
    public nonisolated func currentDocuments() -> [AlarmDocument] { documentUpdates.value }
}
