import AlarmKit
import Foundation
import Logging
import Mosquitto
import Synchronization

/// One MQTT 5 connection of the bench (an `MQTTClient`): sends requests and matches their replies
/// by correlation data, and hands every other message to `onMessage` with the time it arrived.
///
/// Times are taken when the client's event stream delivers the message to this task, so they
/// include one hop from libmosquitto's thread into Swift concurrency; the echo baseline goes
/// through the same hop, which the ratios cancel out.
final class BenchClient: Sendable {
    struct Reply: Sendable {
        var payload: [UInt8]
        /// From just before the publish to the reply's arrival.
        var latency: Int64
    }

    /// A message that is not a reply, with its arrival time on both clocks.
    struct Arrival: Sendable {
        var message: MQTTMessage
        var monotonic: Int64
        var realtime: Int64
    }

    let client: MQTTClient
    let replyTopic: String
    private let onMessage: (@Sendable (Arrival) -> Void)?
    private let state = Mutex(State())
    private static let replyTimeout: Int64 = 10_000_000_000

    private struct Pending {
        var continuation: CheckedContinuation<Reply, any Error>
        var sentAt: Int64
    }

    private struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: Pending] = [:]
        var connected: CheckedContinuation<Void, any Error>?
        var isConnected = false
        var lostReplies = 0
        var stopped = false
    }

    /// The topic the echo baseline listens on.
    static let echoTopic = "bench/echo"
    /// True for the echo baseline: a bare client that answers each request on ``echoTopic`` by
    /// republishing it to its response topic with its correlation data.
    private let isEchoResponder: Bool

    init(name: String, port: Int, echoResponder: Bool = false, onMessage: (@Sendable (Arrival) -> Void)? = nil) throws {
        replyTopic = "bench/reply/\(name)"
        self.onMessage = onMessage
        isEchoResponder = echoResponder
        var logger = Logger(label: "bench.mqtt")
        logger.logLevel = .error  // a lost connection shows as a failed request; at the end the broker goes first
        client = try MQTTClient(configuration: MQTTConfiguration(host: "127.0.0.1", port: port, clientID: "bench-\(name)"),
                                logger: logger)
    }

    /// Subscribes (its reply topic and `subscriptions`), connects, and returns once connected.
    func start(subscriptions: [String] = []) async throws {
        try client.subscribe(replyTopic, qos: 1)
        for filter in subscriptions { try client.subscribe(filter, qos: 1) }
        Task { await consumeEvents() }
        Task { await expireRequests() }
        try client.connect()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready = state.withLock { state in
                if !state.isConnected { state.connected = continuation }
                return state.isConnected
            }
            if ready { continuation.resume() }
        }
    }

    /// How many requests got no reply within 10 s.
    var lostReplies: Int { state.withLock { $0.lostReplies } }

    /// Publishes `payload` to `topic` as an MQTT 5 request and waits for its reply (10 s at most).
    func request(_ topic: String, _ payload: [UInt8]) async throws -> Reply {
        try await withCheckedThrowingContinuation { continuation in
            let sentAt = Nanos.monotonic()
            let id = state.withLock { state in
                let id = state.nextID
                state.nextID += 1
                state.pending[id] = Pending(continuation: continuation, sentAt: sentAt)
                return id
            }
            let correlation = withUnsafeBytes(of: id.littleEndian) { Array($0) }
            do {
                try client.publish(MQTTMessage(topic: topic, payload: payload, qos: 1,
                                               responseTopic: replyTopic, correlationData: correlation))
            } catch {
                state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
            }
        }
    }

    func request(_ topic: String, _ text: String) async throws -> Reply {
        try await request(topic, Array(text.utf8))
    }

    /// Publishes without waiting for anything.
    func publish(_ topic: String, _ text: String, retain: Bool = false) {
        try? client.publish(MQTTMessage(topic: topic, string: text, qos: 1, retain: retain))
    }

    func stop() async {
        state.withLock { $0.stopped = true }
        await client.disconnect()
    }

    private func consumeEvents() async {
        for await event in client.events {
            switch event {
            case .connected:
                let waiter = state.withLock { state in
                    state.isConnected = true
                    return state.connected.take()
                }
                waiter?.resume()
            case .disconnected:
                state.withLock { $0.isConnected = false }
            case .message(let message):
                let monotonic = Nanos.monotonic()
                if isEchoResponder, message.topic == Self.echoTopic, let responseTopic = message.responseTopic {
                    try? client.publish(MQTTMessage(topic: responseTopic, payload: message.payload, qos: 1,
                                                    correlationData: message.correlationData))
                } else if message.topic == replyTopic, let data = message.correlationData, data.count == 8 {
                    let id = data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                    if let pending = state.withLock({ $0.pending.removeValue(forKey: id) }) {
                        pending.continuation.resume(returning: Reply(payload: message.payload, latency: monotonic - pending.sentAt))
                    }
                } else {
                    onMessage?(Arrival(message: message, monotonic: monotonic, realtime: Nanos.realtime()))
                }
            }
        }
        let pending = state.withLock { state in
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for request in pending { request.continuation.resume(throwing: BenchError("the bench's MQTT connection closed")) }
    }

    /// Fails requests whose reply is more than 10 s late; counts them as lost.
    private func expireRequests() async {
        while (try? await Task.sleep(for: .milliseconds(500))) != nil {
            let now = Nanos.monotonic()
            let expired = state.withLock { state -> [Pending] in
                let ids = state.pending.filter { now - $0.value.sentAt > Self.replyTimeout }.map(\.key)
                state.lostReplies += ids.count
                return ids.compactMap { state.pending.removeValue(forKey: $0) }
            }
            for request in expired { request.continuation.resume(throwing: BenchError("no reply within 10 s")) }
            if state.withLock({ $0.stopped }) { return }
        }
    }
}

/// Whether a reply says the node refused the command (`"ok": false`). It runs on the load
/// generator's thread for every reply, some of them the 80 KB of a `list`: the node writes `ok`
/// as the top-level object's last member, so a reply that ends with `"ok":true}` is read no
/// further; any other is parsed (with AlarmKit's parser).
func isRefusal(_ payload: [UInt8]) -> Bool {
    if payload.count >= acceptedEnding.count, payload.suffix(acceptedEnding.count).elementsEqual(acceptedEnding) { return false }
    return (try? JSONDecoder().decode(JSONValue.self, from: Data(payload)))?["ok"] == .bool(false)
}

private let acceptedEnding = Array(#""ok":true}"#.utf8)

/// A JSON object from a payload, or nil.
func jsonObject(_ payload: [UInt8]) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
}
