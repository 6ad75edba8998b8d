import Logging
import Mosquitto
import MosquittoTestSupport
import Testing

/// libmosquitto's own messages are passed to the log only from `MQTTClient.libraryLogThreshold`
/// on (below it the client does not ask libmosquitto for them, which formats one per packet).
@Suite("libmosquitto's messages in the log", .serialized, .timeLimit(.minutes(1)))
struct LibraryLogTests {
    @Test("At trace level the packets libmosquitto sends and receives are logged")
    func tracedPackets() async throws {
        try await TestBroker.withBroker { broker in
            let recorder = LogRecorder()
            let client = try MQTTClient(configuration: broker.clientConfiguration(clientID: "traced"), logger: recorder.logger(at: .trace))
            let events = EventRecorder(client)
            try client.connect()
            try client.subscribe("traced/#", qos: 1)
            try await events.connected()
            try client.publish(MQTTMessage(topic: "traced/x", string: "1", qos: 1))
            _ = try await events.message(on: "traced/x")
            await client.disconnect()
            let library = recorder.libraryTexts.filter { $0.hasPrefix("libmosquitto:") }
            #expect(library.contains { $0.contains("sending CONNECT") }, "\(library)")
            #expect(library.contains { $0.contains("sending PUBLISH") }, "\(library)")
        }
    }

    /// With TLS, OpenSSL's errors reach the log only through libmosquitto's callback, so it is set
    /// at every level: a broker whose certificate the configured authority did not sign is
    /// reported at info level.
    @Test("With TLS, libmosquitto's OpenSSL errors are logged at the default level")
    func tlsErrorsAtInfo() async throws {
        try await TestBroker.withBroker(started: false, tls: true) { otherAuthority in
            try await TestBroker.withBroker(tls: true) { broker in
                let recorder = LogRecorder()
                var configuration = broker.clientConfiguration(clientID: "wrong-ca")
                configuration.tls = .init(caFile: otherAuthority.tlsCAFile)
                let client = try MQTTClient(configuration: configuration, logger: recorder.logger(at: .info))
                try client.connect()
                let start = ContinuousClock.now
                func openSSLErrors() -> [String] {
                    recorder.libraryTexts.filter { $0.hasPrefix("libmosquitto:") && $0.contains("OpenSSL") }
                }
                while openSSLErrors().isEmpty, ContinuousClock.now - start < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                await client.disconnect()
                #expect(!openSSLErrors().isEmpty, "\(recorder.libraryTexts)")
            }
        }
    }
}

extension LogRecorder {
    /// Each message, with libmosquitto's own text after it when it is one of libmosquitto's.
    var libraryTexts: [String] {
        entries.map { entry in entry.metadata["mosquitto.log"].map { "\(entry.message): \($0)" } ?? entry.message }
    }
}
