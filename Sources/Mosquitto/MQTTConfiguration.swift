/// The MQTT protocol version a client speaks.
public enum MQTTProtocolVersion: Sendable, Hashable, CustomStringConvertible {
    /// MQTT 5: supports request/response properties (response topic, correlation data).
    case v5
    /// MQTT 3.1.1: no properties.
    case v311

    public var description: String { self == .v5 ? "MQTT 5" : "MQTT 3.1.1" }
}

/// Which MQTT version a client speaks: `broker.protocol` in alarmd's configuration, `--protocol`
/// of alarmctl, ``MQTTConfiguration/protocolSetting``. The raw values are the setting's words.
public enum MQTTProtocolSetting: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// MQTT 5 first; MQTT 3.1.1 when the broker refuses or drops the MQTT 5 CONNECT (RabbitMQ's
    /// MQTT plugin before 3.13 drops it). The version a broker accepted is kept for every reconnect.
    case auto
    /// MQTT 5 only.
    case v5 = "5"
    /// MQTT 3.1.1 only: replies then travel by the payload's `replyTo`.
    case v311 = "3.1.1"

    /// The version tried first.
    public var firstVersion: MQTTProtocolVersion { self == .v311 ? .v311 : .v5 }

    public var description: String { rawValue }

    /// The words accepted, for error messages: `auto, 5 or 3.1.1`.
    public static let choices = "auto, 5 or 3.1.1"
}

/// How an ``MQTTClient`` reaches its broker and behaves while it cannot.
public struct MQTTConfiguration: Sendable {
    /// TLS settings, handed to `mosquitto_tls_set` and `mosquitto_tls_insecure_set`.
    public struct TLS: Sendable {
        /// A PEM file of trusted certificate authorities; without it, the system's are used.
        public var caFile: String?
        /// The client's PEM certificate, for brokers that require client certificates.
        public var certFile: String?
        /// The private key of `certFile`, unencrypted.
        public var keyFile: String?
        /// Skip checking that the broker's certificate names `host`. Never use this in production.
        public var insecure: Bool

        public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }

    /// The message the broker publishes for this client when its connection ends without a clean
    /// DISCONNECT (crash, power loss, network failure). Set with `mosquitto_will_set`.
    public struct Will: Sendable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    public var host: String
    public var port: Int
    public var clientID: String
    public var username: String?
    public var password: String?
    public var tls: TLS?
    /// Seconds between keepalive pings; a silent broker is noticed after about 1.5 times this.
    /// libmosquitto accepts 5...65535.
    public var keepAlive: Int
    /// Which version to speak; `.auto` (the default) tries MQTT 5 and falls back to 3.1.1.
    public var protocolSetting: MQTTProtocolSetting
    public var will: Will?
    /// The topic of the birth message, the will's counterpart: the latest retained message
    /// published on it goes first after every connection, before what was buffered meanwhile, so
    /// that subscribers hear the client is back before they hear what it did while away.
    public var birthTopic: String?
    /// The wait before the first reconnect attempt; it doubles after each failed attempt...
    public var reconnectDelay: Duration
    /// ...up to this cap while the broker cannot be reached (1 s by default): an attempt that is
    /// refused costs little, and the state should be back on the broker soon after it returns.
    public var maximumReconnectDelay: Duration
    /// The cap instead after connections that the broker dropped soon after accepting them (two
    /// clients with one client id taking the session from each other; 5 s by default).
    public var maximumDelayAfterShortConnections: Duration
    /// How many non-retained messages are kept while disconnected; the oldest are dropped beyond it.
    /// Retained messages are kept apart, the latest per topic, so they need no bound of their own.
    public var outgoingBufferLimit: Int

    public init(
        host: String,
        port: Int = 1883,
        clientID: String,
        username: String? = nil,
        password: String? = nil,
        tls: TLS? = nil,
        keepAlive: Int = 15,
        protocolSetting: MQTTProtocolSetting = .auto,
        will: Will? = nil,
        birthTopic: String? = nil,
        reconnectDelay: Duration = .milliseconds(500),
        maximumReconnectDelay: Duration = .seconds(1),
        maximumDelayAfterShortConnections: Duration = .seconds(5),
        outgoingBufferLimit: Int = 1000
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.username = username
        self.password = password
        self.tls = tls
        self.keepAlive = keepAlive
        self.protocolSetting = protocolSetting
        self.will = will
        self.birthTopic = birthTopic
        self.reconnectDelay = reconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.maximumDelayAfterShortConnections = maximumDelayAfterShortConnections
        self.outgoingBufferLimit = outgoingBufferLimit
    }

    /// `host:port`, as used in log metadata and error messages.
    var brokerAddress: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The host libmosquitto connects to: `localhost` as 127.0.0.1, unless TLS must check that name.
    /// Debian's /etc/hosts gives ::1 first for localhost, and libmosquitto's asynchronous connect
    /// keeps to the first address whose connect(2) does not fail at once: a broker that listens on
    /// 127.0.0.1 only (deploy/mosquitto/alarmd.conf) was then never reached.
    var connectHost: String { host == "localhost" && tls == nil ? "127.0.0.1" : host }
}
