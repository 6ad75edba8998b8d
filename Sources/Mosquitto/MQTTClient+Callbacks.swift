import CMosquitto
import Glibc
import Logging

/// The libmosquitto callbacks, which run on the network thread.
extension MQTTClient {
    private static func client(from userData: UnsafeMutableRawPointer?) -> MQTTClient {
        // Set in installCallbacks(); callbacks only run while the network thread, which holds a
        // strong reference, is alive.
        Unmanaged<MQTTClient>.fromOpaque(userData!).takeUnretainedValue()
    }

    /// Registers the callbacks (`mosquitto_connect_v5_callback_set` and friends) with `self` as user
    /// data (`mosquitto_user_data_set`). Closures are capture-free so they convert to C function pointers.
    func installCallbacks() {
        let pointer = handle.pointer
        mosquitto_user_data_set(pointer, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_v5_callback_set(pointer) { _, userData, result, flags, _ in
            MQTTClient.client(from: userData).connectionAcknowledged(result: result, flags: flags)
        }
        mosquitto_disconnect_v5_callback_set(pointer) { _, userData, result, _ in
            let savedErrno = errno
            MQTTClient.client(from: userData).connectionEnded(result: result, errno: savedErrno)
        }
        mosquitto_message_v5_callback_set(pointer) { _, userData, message, properties in
            guard let message else { return }
            MQTTClient.client(from: userData).messageArrived(message.pointee, properties: properties)
        }
        mosquitto_publish_v5_callback_set(pointer) { _, userData, messageID, reasonCode, _ in
            MQTTClient.client(from: userData).publishAcknowledged(messageID: messageID, reasonCode: reasonCode)
        }
        mosquitto_subscribe_v5_callback_set(pointer) { _, userData, messageID, count, grantedQoS, _ in
            let granted = grantedQoS.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
            MQTTClient.client(from: userData).subscriptionAcknowledged(messageID: messageID, grantedQoS: granted)
        }
        // libmosquitto formats a message for every packet sent and received (malloc, vsnprintf)
        // whenever a log callback is set, before any level applies (printf-family code was 1.5 %
        // of the daemon's CPU in a profile). Without TLS its messages are debug and trace ones,
        // apart from two warnings a QoS 1 client does not meet, so the callback is set only when
        // they are shown; with TLS, OpenSSL's errors come only this way, so it is always set.
        if logger.logLevel <= Self.libraryLogThreshold || configuration.tls != nil {
            mosquitto_log_callback_set(pointer) { _, userData, level, text in
                guard let text else { return }
                MQTTClient.client(from: userData).libraryLogged(level: level, text: String(cString: text))
            }
        }
    }

    /// The log level from which libmosquitto's own messages are passed on (its info and notice
    /// ones are logged at this level, its debug ones at trace).
    static let libraryLogThreshold: Logger.Level = .debug

    private func connectionAcknowledged(result: Int32, flags: Int32) {
        let refusal = result == MOSQ_ERR_SUCCESS.rawValue
            ? nil
            : MQTTError(mosquittoCode: result, during: .connack, broker: configuration.brokerAddress)
        state.withLock { $0.machine.connectionAcknowledged(sessionPresent: flags & 1 != 0, refusal: refusal) }
    }

    private func connectionEnded(result: Int32, errno savedErrno: Int32) {
        let reason = MQTTError(mosquittoCode: result, errno: savedErrno, during: .connectionEnded, broker: configuration.brokerAddress)
        let (event, acknowledgementWaiter) = state.withLock { state in
            (state.machine.connectionEnded(reason: reason), state.acknowledgementWaiter.take())
        }
        acknowledgementWaiter?.resume()
        guard let event else { return }
        if result == MOSQ_ERR_SUCCESS.rawValue {
            logger.info("MQTT disconnected")
        } else {
            logger.warning("MQTT connection lost", metadata: ["error": "\(reason.message)"])
        }
        eventSink.yield(event)
    }

    /// Copies everything out of libmosquitto's message, which is freed when the callback returns.
    /// The property readers (`mosquitto_property_read_string`, `_binary`) return nil for nil properties.
    private func messageArrived(_ message: mosquitto_message, properties: OpaquePointer?) {
        var responseTopic: UnsafeMutablePointer<CChar>?
        var correlationData: UnsafeMutableRawPointer?
        var correlationLength: UInt16 = 0
        mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &responseTopic, false)
        let hasCorrelationData = mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &correlationData, &correlationLength, false) != nil
        defer {
            free(responseTopic)
            free(correlationData)
        }
        eventSink.yield(.message(MQTTMessage(
            topic: String(cString: message.topic),
            payload: Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))),
            qos: Int(message.qos),
            retain: message.retain,
            responseTopic: responseTopic.map { String(cString: $0) },
            correlationData: hasCorrelationData ? Array(UnsafeRawBufferPointer(start: correlationData, count: Int(correlationLength))) : nil
        )))
    }

    /// Under the send lock, so that the message id of a publish is recorded before its PUBACK is.
    private func publishAcknowledged(messageID: Int32, reasonCode: Int32) {
        let (topic, waiter) = sendLock.withLock { _ in
            state.withLock { state in
                let (topic, allAcknowledged) = state.machine.publishAcknowledged(messageID: messageID)
                return (topic, allAcknowledged ? state.acknowledgementWaiter.take() : nil)
            }
        }
        if reasonCode >= 128 {
            logger.warning("MQTT broker rejected a publish", metadata: [
                "mqtt.topic": "\(topic ?? "?")", "mqtt.reason": "\(String(cString: mosquitto_reason_string(reasonCode)))"])
        }
        waiter?.resume()
    }

    /// Under the send lock, so that the message id of a SUBSCRIBE is recorded before its SUBACK is.
    private func subscriptionAcknowledged(messageID: Int32, grantedQoS: [Int32]) {
        let (filter, event) = sendLock.withLock { _ in
            state.withLock { $0.machine.subscriptionAcknowledged(messageID: messageID) }
        }
        for granted in grantedQoS where granted >= 128 {
            logger.error("MQTT broker refused a subscription", metadata: [
                "mqtt.filter": "\(filter ?? "?")",
                "mqtt.reason": "\(String(cString: mosquitto_reason_string(granted)))",
            ])
        }
        if let event { eventSink.yield(event) }
    }

    private func libraryLogged(level: Int32, text: String) {
        let logLevel: Logger.Level = switch level {
        case MOSQ_LOG_ERR: .error
        case MOSQ_LOG_WARNING: .warning
        case MOSQ_LOG_NOTICE, MOSQ_LOG_INFO: Self.libraryLogThreshold
        default: .trace
        }
        logger.log(level: logLevel, "libmosquitto", metadata: ["mosquitto.log": "\(text)"])
    }
}

