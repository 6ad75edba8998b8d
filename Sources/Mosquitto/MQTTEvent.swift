/// What an ``MQTTClient`` reports through ``MQTTClient/events``.
public enum MQTTEvent: Sendable, Equatable {
    /// The broker accepted the connection. By the time this arrives, the messages buffered while
    /// disconnected have been handed to libmosquitto in order, and the broker has acknowledged every
    /// subscription made so far (each is sent again on every connection). Publish your full state
    /// here: the broker may have lost it.
    case connected(sessionPresent: Bool)
    /// A connection that was up has ended; the client reconnects by itself unless
    /// ``MQTTClient/disconnect()`` was called. Failed attempts to connect are logged, not reported here.
    case disconnected(reason: String)
    /// A message arrived on a subscribed topic.
    case message(MQTTMessage)
}
