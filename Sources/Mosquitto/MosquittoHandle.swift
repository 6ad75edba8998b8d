import CMosquitto
import Glibc

/// The `struct mosquitto *` of one client.
///
/// `@unchecked Sendable` because the pointer is shared between the caller's threads and the network
/// thread under these rules: `mosquitto_publish_v5` and `mosquitto_subscribe` are made thread-safe
/// by libmosquitto itself (`mosquitto_threaded_set(true)` makes it take its mutexes and leave socket
/// writes to the network thread), and ``MQTTClient`` makes them under its send lock; `mosquitto_loop`,
/// `mosquitto_loop_read`, `mosquitto_loop_write`, `mosquitto_loop_misc`, `mosquitto_connect_async`,
/// `mosquitto_reconnect_async`, `mosquitto_disconnect` (it reads, unlocked, the socket that those
/// set; with TLS only, `MQTTClient.disconnect()` calls it itself, as nothing else wakes
/// `mosquitto_loop`) and the protocol fallback run only on the network thread; configuration
/// happens in `init` before the pointer is shared; `mosquitto_destroy` runs in `MQTTClient.deinit`,
/// when no thread uses it.
struct MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// `mosquitto_new` with a clean session, then the configuration. Destroys the handle if a
    /// setting fails, so nothing leaks from a throwing init.
    init(configuration: MQTTConfiguration) throws(MQTTError) {
        try Self.validate(configuration)
        guard let pointer = mosquitto_new(configuration.clientID, true, nil) else {
            let savedErrno = errno
            throw MQTTError(
                code: savedErrno == ENOMEM ? .outOfMemory : .invalidConfiguration,
                message: "creating the libmosquitto client '\(configuration.clientID)' failed (\(String(cString: strerror(savedErrno))))"
            )
        }
        do {
            try Self.apply(configuration, to: pointer)
        } catch {
            mosquitto_destroy(pointer)
            throw error
        }
        self.pointer = pointer
    }

    private static func validate(_ configuration: MQTTConfiguration) throws(MQTTError) {
        func invalid(_ message: String) -> MQTTError { MQTTError(code: .invalidConfiguration, message: message) }
        guard !configuration.host.isEmpty else { throw invalid("the MQTT broker host is empty: set a host name or address") }
        guard (1...65535).contains(configuration.port) else {
            throw invalid("MQTT broker port \(configuration.port) is out of range: use 1...65535 (usually 1883, or 8883 for TLS)")
        }
        guard !configuration.clientID.isEmpty, configuration.clientID.utf8.count <= 65535 else {
            throw invalid("the MQTT client id must be 1 to 65535 bytes: the broker tells clients apart by it")
        }
        guard (5...65535).contains(configuration.keepAlive) else {
            throw invalid("MQTT keepalive \(configuration.keepAlive) s is out of range: libmosquitto accepts 5...65535 seconds")
        }
        guard configuration.reconnectDelay > .zero, configuration.maximumReconnectDelay >= configuration.reconnectDelay,
              configuration.maximumDelayAfterShortConnections >= configuration.reconnectDelay else {
            throw invalid("MQTT reconnect delays are inconsistent: need 0 < reconnectDelay <= maximumReconnectDelay and maximumDelayAfterShortConnections")
        }
        guard configuration.outgoingBufferLimit >= 0 else {
            throw invalid("MQTT outgoing buffer limit \(configuration.outgoingBufferLimit) is negative: use 0 or more")
        }
        guard configuration.password == nil || configuration.username != nil else {
            throw invalid("an MQTT password is set without a username: set both")
        }
        if let will = configuration.will, !(0...2).contains(will.qos) {
            throw invalid("MQTT will QoS \(will.qos) is invalid: use 0, 1 or 2")
        }
        if let tls = configuration.tls {
            let files = [("tls.caFile", tls.caFile), ("tls.certFile", tls.certFile), ("tls.keyFile", tls.keyFile)]
            for case let (setting, path?) in files where access(path, R_OK) != 0 {
                throw invalid("\(setting) '\(path)' is not readable (\(String(cString: strerror(errno)))): check the path and its permissions")
            }
            guard (tls.certFile == nil) == (tls.keyFile == nil) else {
                throw invalid("tls.certFile and tls.keyFile go together: set both or neither")
            }
            guard tls.certFile == nil || tls.caFile != nil else { throw invalid("a TLS client certificate needs tls.caFile as well") }
        }
    }

    private static func apply(_ configuration: MQTTConfiguration, to pointer: OpaquePointer) throws(MQTTError) {
        let broker = configuration.brokerAddress
        func check(_ result: Int32, _ setting: String) throws(MQTTError) {
            guard result == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(mosquittoCode: result, errno: errno, during: .configure(setting: setting), broker: broker)
            }
        }
        try check(mosquitto_threaded_set(pointer, true), "threading")
        let version = configuration.protocolSetting.firstVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, version), "protocolVersion")
        try check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(pointer, username, configuration.password), "username")
        }
        if let will = configuration.will {
            let result = will.payload.withUnsafeBytes { payload in
                mosquitto_will_set(pointer, will.topic, Int32(payload.count), payload.baseAddress, Int32(will.qos), will.retain)
            }
            try check(result, "will (topic '\(will.topic)')")
        }
        if let tls = configuration.tls {
            if tls.caFile == nil {
                try check(mosquitto_int_option(pointer, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "tls (system certificate authorities)")
            } else {
                try check(mosquitto_tls_set(pointer, tls.caFile, nil, tls.certFile, tls.keyFile, nil), "tls")
            }
            try check(mosquitto_tls_insecure_set(pointer, tls.insecure), "tls.insecure")
        }
    }
}

// MARK: - Sending (callers hold the client's send lock, not its state lock)

extension MosquittoHandle {
    /// Calls `mosquitto_publish_v5`, with the message's response topic and correlation data as
    /// properties on MQTT 5 (`mosquitto_property_add_string`, `mosquitto_property_add_binary`); MQTT
    /// 3.1.1 has no properties, so they are left out there.
    func publish(_ message: MQTTMessage, protocolVersion: MQTTProtocolVersion, broker: String) throws(MQTTError) -> MQTTConnectionStateMachine.HandOverOutcome {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if protocolVersion == .v5 { try Self.addProperties(of: message, to: &properties, broker: broker) }
        var messageID: Int32 = 0
        let result = message.payload.withUnsafeBytes { payload in
            mosquitto_publish_v5(
                pointer, &messageID, message.topic, Int32(payload.count), payload.baseAddress,
                Int32(message.qos), message.retain, properties
            )
        }
        switch result {
        case MOSQ_ERR_SUCCESS.rawValue: return .accepted(messageID: messageID)
        case MOSQ_ERR_NO_CONN.rawValue:
            // The connection dropped a moment ago: libmosquitto has queued a QoS 1/2 message and
            // sends it after reconnecting, but not a QoS 0 one.
            return message.qos == 0 ? .notConnected : .accepted(messageID: messageID)
        default: throw MQTTError(mosquittoCode: result, during: .publish(topic: message.topic), broker: broker)
        }
    }

    private static func addProperties(of message: MQTTMessage, to properties: inout OpaquePointer?, broker: String) throws(MQTTError) {
        var result = MOSQ_ERR_SUCCESS.rawValue
        if let responseTopic = message.responseTopic {
            result = mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), responseTopic)
        }
        if let correlationData = message.correlationData, result == MOSQ_ERR_SUCCESS.rawValue {
            result = correlationData.withUnsafeBytes { bytes in
                mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress, UInt16(bytes.count))
            }
        }
        guard result == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(mosquittoCode: result, during: .publish(topic: message.topic), broker: broker)
        }
    }

    /// Calls `mosquitto_subscribe`, or `mosquitto_subscribe_v5` with `MQTT_SUB_OPT_NO_LOCAL` when
    /// `subscription.noLocal`, and returns the SUBSCRIBE's message id (nil without a connection:
    /// the next connection setup sends it).
    func subscribe(_ subscription: MQTTConnectionStateMachine.Subscription, broker: String) throws(MQTTError) -> Int32? {
        var messageID: Int32 = 0
        let result = subscription.noLocal
            ? mosquitto_subscribe_v5(pointer, &messageID, subscription.filter, Int32(subscription.qos), Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue), nil)
            : mosquitto_subscribe(pointer, &messageID, subscription.filter, Int32(subscription.qos))
        switch result {
        case MOSQ_ERR_SUCCESS.rawValue: return messageID
        case MOSQ_ERR_NO_CONN.rawValue: return nil
        default: throw MQTTError(mosquittoCode: result, during: .subscribe(filter: subscription.filter), broker: broker)
        }
    }

    /// Checks a subscription's QoS and filter (`mosquitto_sub_topic_check`).
    static func validate(filter: String, qos: Int, broker: @autoclosure () -> String) throws(MQTTError) {
        try validate(qos: qos, for: filter)
        let result = mosquitto_sub_topic_check(filter)
        guard result == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(mosquittoCode: result, during: .subscribe(filter: filter), broker: broker())
        }
    }

    /// Checks a message before it is handed over or buffered (`mosquitto_pub_topic_check`).
    static func validate(_ message: MQTTMessage) throws(MQTTError) {
        try validate(qos: message.qos, for: message.topic)
        guard mosquitto_pub_topic_check(message.topic) == MOSQ_ERR_SUCCESS.rawValue, !message.topic.isEmpty else {
            throw MQTTError(code: .invalidArgument, message: "cannot publish to '\(message.topic)': a topic must be non-empty, valid UTF-8 and without the wildcards + and #")
        }
        // Checked here too because a buffered message only reaches mosquitto_publish_v5 later.
        guard message.payload.count <= Int(MQTT_MAX_PAYLOAD) else {
            throw MQTTError(code: .invalidArgument, message: "the payload for '\(message.topic)' is \(message.payload.count) bytes: MQTT allows at most \(MQTT_MAX_PAYLOAD)")
        }
        if let responseTopic = message.responseTopic, mosquitto_pub_topic_check(responseTopic) != MOSQ_ERR_SUCCESS.rawValue || responseTopic.isEmpty {
            throw MQTTError(code: .invalidArgument, message: "response topic '\(responseTopic)' of a message to '\(message.topic)' is invalid: it must be a topic name without wildcards")
        }
        if let correlationData = message.correlationData, correlationData.count > Int(UInt16.max) {
            throw MQTTError(code: .invalidArgument, message: "correlation data of a message to '\(message.topic)' is \(correlationData.count) bytes: MQTT allows at most 65535")
        }
    }

    private static func validate(qos: Int, for topic: String) throws(MQTTError) {
        guard (0...2).contains(qos) else {
            throw MQTTError(code: .invalidArgument, message: "QoS \(qos) for '\(topic)' is invalid: use 0, 1 or 2")
        }
    }
}

