import Foundation
import Logging
import Mosquitto
import Synchronization

/// The clients a test started, so that all of them are disconnected whatever the test does.
public final class TestClients: Sendable {
    private let clients = Mutex<[MQTTClient]>([])

    /// A logger for tests; its level comes from `MQTT_TEST_LOG_LEVEL` (default `warning`).
    public static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        let level = ProcessInfo.processInfo.environment["MQTT_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = level ?? .warning
        return logger
    }

    /// Creates a client, starts recording its events, subscribes to `filters` (QoS 1) and calls
    /// ``MQTTClient/connect()``. Subscribed before connecting, the filters are acknowledged by the
    /// time `.connected` arrives; a subscription made after `connect()` may come after it, when the
    /// connection was quicker than the caller.
    public func start(_ configuration: MQTTConfiguration, subscribing filters: [String] = [], noLocal: Bool = false) throws -> (client: MQTTClient, events: EventRecorder) {
        let client = try MQTTClient(configuration: configuration, logger: Self.logger("mqtt.\(configuration.clientID)"))
        let events = EventRecorder(client)
        clients.withLock { $0.append(client) }
        for filter in filters { try client.subscribe(filter, qos: 1, noLocal: noLocal) }
        try client.connect()
        return (client, events)
    }

    /// Adds a client that its caller connects and reads itself, so that it too is disconnected
    /// at the end.
    public func adopt(_ client: MQTTClient) {
        clients.withLock { $0.append(client) }
    }

    /// Disconnects every client started here.
    public func disconnectAll() async {
        for client in clients.withLock({ $0 }) {
            await client.disconnect()
        }
    }
}

/// Runs `body` with a ``TestClients`` and disconnects its clients afterwards, also when `body` throws.
public func withTestClients<Result>(_ body: (TestClients) async throws -> Result) async throws -> Result {
    let clients = TestClients()
    do {
        let result = try await body(clients)
        await clients.disconnectAll()
        return result
    } catch {
        await clients.disconnectAll()
        throw error
    }
}
