import Logging
import Mosquitto
import Synchronization

/// The MQTT client of a ``RemoteNodeConnection`` or a ``RemoteGroup``, made on first use.
protocol RemoteClientState {
    var client: MQTTClient? { get set }
    /// The task that hands the client's messages over.
    var loop: Task<Void, Never>? { get set }
    /// Why the MQTT client could not be created (an unreadable TLS file, …), for the request's error.
    var setupFailure: String? { get set }
}

extension Mutex where Value: RemoteClientState {
    /// Creates the client once (later calls do nothing), subscribes to `filters` (QoS 1), connects,
    /// and hands every message to `receive` on a task of its own until the client's events end or
    /// `receive` returns false (its owner is gone). A failure is logged: after a failure to create
    /// the client, requests fail with it; after one to subscribe or connect, the client keeps trying.
    func startClient(
        settings: RemoteNodeSettings, filters: [String], logger: Logger, receive: @escaping @Sendable (MQTTMessage) -> Bool
    ) {
        // Logged after the lock is released: a log handler may deliver the line to observers
        // (alarmctl's connection problems), and nothing is delivered under the lock, which the
        // owner's stream termination handlers take.
        let setup = withLock { state -> Result<MQTTClient, MQTTError>? in
            guard state.client == nil else { return nil }
            do throws(MQTTError) {
                let client = try MQTTClient(configuration: settings.mqttConfiguration(), logger: logger)
                state.client = client
                return .success(client)
            } catch {
                state.setupFailure = "\(error)"
                return .failure(error)
            }
        }
        switch setup {
        case .success(let client):
            do {
                for filter in filters { try client.subscribe(filter, qos: 1) }
                try client.connect()
            } catch {
                logger.error("MQTT connect failed", metadata: ["error": "\(error)"])
            }
            let loop = Task { [events = client.events] in
                for await event in events {
                    if case .message(let message) = event, !receive(message) { return }
                }
            }
            withLock { $0.loop = loop }
        case .failure(let error):
            logger.error("MQTT client not created", metadata: ["error": "\(error)"])
        case nil:
            break
        }
    }
}
