/// One MQTT application message, outgoing or received.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// 0, 1 or 2.
    public var qos: Int
    public var retain: Bool
    /// MQTT 5 response topic: where the receiver of a request should publish its reply.
    /// Sent only on MQTT 5 connections; always nil on messages received over MQTT 3.1.1.
    public var responseTopic: String?
    /// MQTT 5 correlation data, echoed in a reply so that the requester can match it.
    /// Sent only on MQTT 5 connections; at most 65,535 bytes.
    public var correlationData: [UInt8]?

    public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }

    /// A message whose payload is the UTF-8 encoding of `string`.
    public init(topic: String, string: String, qos: Int = 1, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.init(topic: topic, payload: Array(string.utf8), qos: qos, retain: retain,
                  responseTopic: responseTopic, correlationData: correlationData)
    }

    /// The payload decoded as UTF-8, or nil when it is not valid UTF-8.
    public var payloadString: String? { String(validating: payload, as: UTF8.self) }
}
