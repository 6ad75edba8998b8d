import CMosquitto
import Glibc

/// An MQTT failure, with a message that says what went wrong and what to do about it.
public struct MQTTError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// A setting in ``MQTTConfiguration`` is unusable; fix the configuration.
        case invalidConfiguration
        /// A topic, filter, QoS or payload passed to the client is unusable.
        case invalidArgument
        /// The broker could not be reached, or the connection broke.
        case connectionFailed
        /// The broker answered CONNECT with a refusal (credentials, client id, protocol version...).
        case connectionRefused
        /// TLS setup or the TLS handshake failed.
        case tls
        /// libmosquitto or the negotiated protocol version cannot do what was asked.
        case notSupported
        /// ``MQTTClient/connect()`` was called on a client that is already running.
        case alreadyConnected
        /// The client was disconnected with ``MQTTClient/disconnect()`` and cannot be used again.
        case clientClosed
        case outOfMemory
        /// Any other libmosquitto failure; the message carries libmosquitto's own text.
        case libraryFailure
    }

    public let code: Code
    public let message: String
    /// The libmosquitto result that caused the error (a `MOSQ_ERR_*` value, a CONNACK result or an
    /// MQTT 5 reason code, depending on where it came from), when libmosquitto was involved.
    public let mosquittoCode: Int32?

    public init(code: Code, message: String, mosquittoCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.mosquittoCode = mosquittoCode
    }

    public var description: String { message }
    /// The message is larger than the broker takes (its maximum packet size, announced over MQTT 5).
    public var isTooLargeForBroker: Bool { mosquittoCode == MOSQ_ERR_OVERSIZE_PACKET.rawValue }
}

/// Where a libmosquitto result came from; it decides how the number is read.
enum MosquittoOperation: Equatable {
    /// A configuration call (`mosquitto_will_set`, `mosquitto_tls_set`...) about `setting`.
    case configure(setting: String)
    /// `mosquitto_connect_async` or `mosquitto_reconnect_async`.
    case connect
    /// The result in a CONNACK: 3.1.1 codes 1–5 or MQTT 5 reason codes of 128 and more.
    case connack
    /// The code given to the disconnect callback: a `MOSQ_ERR_*` value below 128, or the MQTT 5
    /// reason code of a DISCONNECT sent by the broker from 128 on.
    case connectionEnded
    case publish(topic: String)
    case subscribe(filter: String)
}

extension MQTTError {
    /// The one funnel from libmosquitto's numbers to ``MQTTError``. Texts come from
    /// `mosquitto_strerror`, `mosquitto_connack_string` and `mosquitto_reason_string`;
    /// `errno` must be captured right after the failing call (for `MOSQ_ERR_ERRNO`).
    init(mosquittoCode: Int32, errno: Int32 = 0, during operation: MosquittoOperation, broker: String) {
        var mosquittoCode = mosquittoCode
        if mosquittoCode == MOSQ_ERR_ERRNO.rawValue, errno == 0, [.connect, .connectionEnded].contains(operation) {
            // libmosquitto's packet__read returns MOSQ_ERR_ERRNO, leaving errno as it was (0, which
            // reads "Success"), when the socket ends in the middle of a packet: the peer closed it.
            mosquittoCode = MOSQ_ERR_CONN_LOST.rawValue
        }
        switch operation {
        case .connack:
            // 3.1.1 brokers answer with codes 1–5; MQTT 5 brokers with reason codes from 128.
            let text = mosquittoCode < 128
                ? String(cString: mosquitto_connack_string(mosquittoCode))
                : String(cString: mosquitto_reason_string(mosquittoCode))
            let advice = switch UInt32(mosquittoCode) {
            case CONNACK_REFUSED_PROTOCOL_VERSION.rawValue, MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue:
                "the broker does not speak this MQTT version"
            case CONNACK_REFUSED_IDENTIFIER_REJECTED.rawValue, MQTT_RC_CLIENTID_NOT_VALID.rawValue: "choose another client id"
            case CONNACK_REFUSED_BAD_USERNAME_PASSWORD.rawValue, MQTT_RC_BAD_USERNAME_OR_PASSWORD.rawValue,
                 CONNACK_REFUSED_NOT_AUTHORIZED.rawValue, MQTT_RC_NOT_AUTHORIZED.rawValue,
                 MQTT_RC_BAD_AUTHENTICATION_METHOD.rawValue:
                "check the username and password, and the broker's ACL"
            case CONNACK_REFUSED_SERVER_UNAVAILABLE.rawValue, MQTT_RC_SERVER_UNAVAILABLE.rawValue,
                 MQTT_RC_SERVER_BUSY.rawValue:
                "the broker is not ready; retrying"
            case MQTT_RC_BANNED.rawValue: "the broker has banned this client; ask its administrator"
            default: "see the broker's log"
            }
            self.init(code: .connectionRefused, message: "broker \(broker) refused the connection (\(text)): \(advice)",
                      mosquittoCode: mosquittoCode)
        case .connectionEnded where mosquittoCode >= 128:
            let reason = String(cString: mosquitto_reason_string(mosquittoCode))
            self.init(code: .connectionFailed, message: "broker \(broker) closed the connection (\(reason)); reconnecting",
                      mosquittoCode: mosquittoCode)
        case .connectionEnded where mosquittoCode == MOSQ_ERR_SUCCESS.rawValue:
            self.init(code: .clientClosed, message: "disconnected from broker \(broker) by the client", mosquittoCode: mosquittoCode)
        default: self = Self.returnCode(mosquittoCode, errno: errno, during: operation, broker: broker)
        }
    }

    private static func returnCode(_ rc: Int32, errno: Int32, during operation: MosquittoOperation, broker: String) -> MQTTError {
        // mosquitto_strerror(MOSQ_ERR_ERRNO) is strerror(errno) too: with errno 0, "Success".
        let text = switch (rc, errno) {
        case (MOSQ_ERR_ERRNO.rawValue, 0): "a system call failed without an error number"
        case (MOSQ_ERR_ERRNO.rawValue, _): String(cString: strerror(errno))
        default: String(cString: mosquitto_strerror(rc))
        }
        let subject = switch operation {
        case .configure(let setting): "setting \(setting)"
        case .connect, .connack, .connectionEnded: "connecting to broker \(broker)"
        case .publish(let topic): "publishing to '\(topic)'"
        case .subscribe(let filter): "subscribing to '\(filter)'"
        }
        func error(_ code: Code, _ message: String) -> MQTTError { MQTTError(code: code, message: message, mosquittoCode: rc) }

        switch rc {
        case MOSQ_ERR_ERRNO.rawValue:
            switch errno {
            case ECONNREFUSED:
                return error(.connectionFailed, "broker \(broker) refused the connection (\(text)): is mosquitto running there? check the configured broker host and port")
            case ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN:
                return error(.connectionFailed, "broker \(broker) is unreachable (\(text)): check the network and the configured broker host")
            case ENOENT, EACCES:
                return error(.invalidConfiguration, "\(subject) failed (\(text)): check that the file exists and is readable")
            default: return error(.connectionFailed, "\(subject) failed (\(text))")
            }
        case MOSQ_ERR_EAI.rawValue, MOSQ_ERR_LOOKUP.rawValue:
            return error(.connectionFailed, "could not resolve the host of broker \(broker) (\(text)): check the host name and that DNS is up")
        case MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_NO_CONN.rawValue:
            return error(.connectionFailed, "lost the connection to broker \(broker) (\(text)): the broker stopped or the network dropped; reconnecting")
        case MOSQ_ERR_KEEPALIVE.rawValue:
            return error(.connectionFailed, "broker \(broker) stopped answering keepalive pings: it is frozen or the network is cut; reconnecting")
        case MOSQ_ERR_CONN_REFUSED.rawValue:
            return error(.connectionRefused, "broker \(broker) refused the connection (\(text)): see the broker's log")
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue, MOSQ_ERR_OCSP.rawValue:
            return error(.tls, "TLS failed while \(subject) (\(text)): check caFile, certFile/keyFile, and that the broker speaks TLS on this port")
        case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue:
            return error(.connectionFailed, "MQTT protocol error while \(subject) (\(text)): is that port an MQTT listener (not TLS or websockets)?")
        case MOSQ_ERR_INVAL.rawValue:
            let code: Code = if case .configure = operation { .invalidConfiguration } else { .invalidArgument }
            return error(code, "\(subject) failed (\(text)): check the value")
        case MOSQ_ERR_MALFORMED_UTF8.rawValue: return error(.invalidArgument, "\(subject) failed: not valid UTF-8")
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue, MOSQ_ERR_OVERSIZE_PACKET.rawValue:
            return error(.invalidArgument, "\(subject) failed (\(text)): the message is larger than MQTT or the broker allows")
        case MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue:
            return error(.notSupported, "\(subject) failed (\(text)): the broker does not allow this QoS")
        case MOSQ_ERR_NOT_SUPPORTED.rawValue:
            return error(.notSupported, "\(subject) failed (\(text)): libmosquitto or this protocol version cannot do it")
        case MOSQ_ERR_NOMEM.rawValue: return error(.outOfMemory, "\(subject) failed: out of memory")
        default: return error(.libraryFailure, "\(subject) failed (libmosquitto: \(text))")
        }
    }

    /// This failure as the end of a connection attempt that got no CONNACK. Whatever closes the
    /// connection, sends what is not MQTT, or stays silent after the CONNECT is most likely not an
    /// MQTT broker (an HTTP server, a websockets or TLS listener), which the message says; other
    /// failures are returned as they are.
    func withoutConnectionAcknowledgement(broker: String) -> MQTTError {
        let what: String
        switch mosquittoCode {
        case MOSQ_ERR_CONN_LOST.rawValue: what = "closed the connection without answering the MQTT CONNECT"
        case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue: what = "answered the MQTT CONNECT with something that is not MQTT"
        case MOSQ_ERR_KEEPALIVE.rawValue: what = "did not answer the MQTT CONNECT (no CONNACK)"
        default: return self
        }
        return MQTTError(
            code: .connectionFailed,
            message: "\(broker) \(what): it may not be an MQTT broker; check that this host and port are the broker's MQTT listener (not an HTTP, websockets or TLS port)",
            mosquittoCode: mosquittoCode
        )
    }
}
