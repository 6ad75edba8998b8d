import Logging
import Mosquitto

extension MQTTClient {
    /// Subscribes to `filters` (QoS 1), connects, and hands every message to `receive` on a task
    /// of its own until the client's events end or `receive` returns false (its owner is gone).
    /// A failure to subscribe or connect is logged: the client keeps trying to connect.
    func receiveMessages(
        on filters: [String], logger: Logger, _ receive: @escaping @Sendable (MQTTMessage) -> Bool
    ) -> Task<Void, Never> {
        do {
            for filter in filters { try subscribe(filter, qos: 1) }
            try connect()
        } catch {
            logger.error("MQTT connect failed", metadata: ["error": "\(error)"])
        }
        return Task { [events] in
            for await event in events {
                if case .message(let message) = event, !receive(message) { return }
            }
        }
    }
}
