import Foundation
import MosquittoTestSupport
import Testing

@testable import Mosquitto

@Suite("Client errors", .timeLimit(.minutes(1)))
struct MQTTClientErrorTests {
    private let logger = TestClients.logger("mqtt.errors")

    private func configuration(port: Int = 1883) -> MQTTConfiguration {
        MQTTConfiguration(host: "127.0.0.1", port: port, clientID: "errors")
    }

    @Test("an out-of-range port is a configuration error that names the fix")
    func invalidPort() {
        let error = #expect(throws: MQTTError.self) {
            try MQTTClient(configuration: configuration(port: 0), logger: logger)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("1...65535") == true)
    }

    @Test("an unreadable CA file is reported before connecting")
    func unreadableCAFile() {
        var settings = configuration()
        settings.tls = .init(caFile: "/nonexistent/ca.pem")
        let error = #expect(throws: MQTTError.self) {
            try MQTTClient(configuration: settings, logger: logger)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("/nonexistent/ca.pem") == true)
    }

    @Test("a will on a wildcard topic is refused by libmosquitto, through the error funnel")
    func wildcardWill() {
        var settings = configuration()
        settings.will = .init(topic: "alarmd/+/status", payload: Array("offline".utf8))
        let error = #expect(throws: MQTTError.self) {
            try MQTTClient(configuration: settings, logger: logger)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.mosquittoCode == 3)  // MOSQ_ERR_INVAL
    }

    @Test("malformed filters, topics, QoS and correlation data are rejected")
    func invalidArguments() throws {
        let client = try MQTTClient(configuration: configuration(), logger: logger)
        #expect(throws: MQTTError.self) { try client.subscribe("a/#/b", qos: 1) }
        #expect(throws: MQTTError.self) { try client.subscribe("a/b", qos: 3) }
        #expect(throws: MQTTError.self) { try client.publish(MQTTMessage(topic: "a/+", string: "x")) }
        #expect(throws: MQTTError.self) { try client.publish(MQTTMessage(topic: "", string: "x")) }
        #expect(throws: MQTTError.self) {
            try client.publish(MQTTMessage(topic: "a", payload: [], correlationData: [UInt8](repeating: 0, count: 70_000)))
        }
        let error = #expect(throws: MQTTError.self) { try client.publish(MQTTMessage(topic: "a", string: "x", qos: 5)) }
        #expect(error?.code == .invalidArgument)
    }

    @Test("the client cannot be started twice or used after disconnect")
    func lifecycle() async throws {
        let port = try TestBroker.freePort()
        let client = try MQTTClient(configuration: configuration(port: port), logger: logger)
        try client.connect()
        let twice = #expect(throws: MQTTError.self) { try client.connect() }
        #expect(twice?.code == .alreadyConnected)

        await client.disconnect()
        let closed = #expect(throws: MQTTError.self) { try client.publish(MQTTMessage(topic: "a", string: "x")) }
        #expect(closed?.code == .clientClosed)
        #expect(!client.isConnected)
    }

    /// The DISCONNECT is left to the network thread: a disconnect() that comes while that thread
    /// connects must still end it (this hangs if the thread never takes the request). The race the
    /// hand-over removes, `mosquitto_disconnect` against `mosquitto_connect_async` on the socket,
    /// shows only under ThreadSanitizer with a libmosquitto built with `-fsanitize=thread`.
    @Test("disconnect() while the network thread is still connecting returns, and the client ends")
    func disconnectWhileConnecting() async throws {
        for _ in 0..<20 {
            let client = try MQTTClient(configuration: configuration(port: try TestBroker.freePort()), logger: logger)
            try client.connect()
            await client.disconnect()
            #expect(!client.isConnected)
        }
    }

    @Test("the error funnel explains libmosquitto's codes and what to do")
    func funnelMessages() {
        let refused = MQTTError(mosquittoCode: 14, errno: ECONNREFUSED, during: .connect, broker: "127.0.0.1:1883")  // MOSQ_ERR_ERRNO
        #expect(refused.code == .connectionFailed)
        #expect(refused.message == "broker 127.0.0.1:1883 refused the connection (Connection refused): is mosquitto running there? check the configured broker host and port")

        let badCredentials = MQTTError(mosquittoCode: 134, during: .connack, broker: "pi:1883")  // MQTT 5 reason code
        #expect(badCredentials.code == .connectionRefused)
        #expect(badCredentials.message.contains("check the username and password"))

        let notAuthorized311 = MQTTError(mosquittoCode: 5, during: .connack, broker: "pi:1883")  // 3.1.1 CONNACK code
        #expect(notAuthorized311.message.contains("not authorised"))

        let shuttingDown = MQTTError(mosquittoCode: 139, during: .connectionEnded, broker: "pi:1883")  // broker's DISCONNECT
        #expect(shuttingDown.message == "broker pi:1883 closed the connection (Server shutting down); reconnecting")
    }

    @Test("MOSQ_ERR_ERRNO with errno 0 (the socket ended inside a packet) is a closed connection, never \"(Success)\"")
    func errnoZero() {
        let ended = MQTTError(mosquittoCode: 14, errno: 0, during: .connectionEnded, broker: "pi:1883")  // MOSQ_ERR_ERRNO
        #expect(ended.mosquittoCode == 7)  // MOSQ_ERR_CONN_LOST
        #expect(ended.message.hasPrefix("lost the connection to broker pi:1883"))
        for operation in [MosquittoOperation.connect, .connectionEnded, .configure(setting: "tls"), .publish(topic: "a"), .subscribe(filter: "a")] {
            let error = MQTTError(mosquittoCode: 14, errno: 0, during: operation, broker: "pi:1883")
            #expect(!error.message.contains("Success"), "\(operation): \(error.message)")
        }
    }

    @Test("an attempt that ends without a CONNACK says that the address may not be an MQTT broker; other failures stay as they are")
    func withoutConnectionAcknowledgement() {
        let closed = MQTTError(mosquittoCode: 7, during: .connectionEnded, broker: "pi:8080").withoutConnectionAcknowledgement(broker: "pi:8080")
        #expect(closed.message == "pi:8080 closed the connection without answering the MQTT CONNECT: it may not be an MQTT broker; "
            + "check that this host and port are the broker's MQTT listener (not an HTTP, websockets or TLS port)")
        #expect(closed.code == .connectionFailed && closed.mosquittoCode == 7)
        let garbled = MQTTError(mosquittoCode: 2, during: .connectionEnded, broker: "pi:8080").withoutConnectionAcknowledgement(broker: "pi:8080")
        #expect(garbled.message.hasPrefix("pi:8080 answered the MQTT CONNECT with something that is not MQTT: it may not be an MQTT broker"))
        let silent = MQTTError(mosquittoCode: 19, during: .connectionEnded, broker: "pi:8080").withoutConnectionAcknowledgement(broker: "pi:8080")
        #expect(silent.message.hasPrefix("pi:8080 did not answer the MQTT CONNECT (no CONNACK): it may not be an MQTT broker"))
        let refused = MQTTError(mosquittoCode: 14, errno: ECONNREFUSED, during: .connect, broker: "pi:8080")
        #expect(refused.withoutConnectionAcknowledgement(broker: "pi:8080").message == refused.message)
    }
}
