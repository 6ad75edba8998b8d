import Foundation
import Logging
import Mosquitto
import Synchronization

/// One MQTT 5 connection of the bench, through the project's public `MQTTClient`:
/// - `request` publishes at QoS 1 with a response topic and correlation data and awaits the reply;
/// - as the echo baseline, it answers each request on `bench/echo/<size>` with `<size>` bytes;
/// - everything else goes to the handlers added with `expect` and `watch`, with its arrival time.
///
/// Times are taken when the client's event stream hands a message to this task, so they include
/// one hop from the client's network thread into Swift concurrency; the echo goes through the same.
final class BenchClient: Sendable {
    /// A message that is not a reply, with its arrival time on both clocks.
    struct Arrival: Sendable {
        var topic: String
        var payload: [UInt8]
        var monotonic: Int64
        var realtime: Int64
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] }
    }

    typealias Handler = @Sendable (Arrival) -> Bool

    private struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: (continuation: CheckedContinuation<(payload: [UInt8], latency: Int64), any Error>, sentAt: Int64)] = [:]
        var connected: CheckedContinuation<Void, Never>?
        var isConnected = false
        var handlers: [UInt64: Handler] = [:]
        var echoPayloads: [Int: [UInt8]] = [:]
    }

    let client: MQTTClient
    private let replyTopic: String
    private let state = Mutex(State())

    init(name: String, port: Int) throws {
        replyTopic = "bench/reply/\(name)"
        var logger = Logger(label: "bench.mqtt")
        logger.logLevel = .critical  // a lost connection shows as a failed request
        client = try MQTTClient(configuration: MQTTConfiguration(host: "127.0.0.1", port: port, clientID: "bench-\(name)"), logger: logger)
    }

    /// Subscribes to its reply topic and `filters`, connects, and returns once connected.
    func start(subscribing filters: [String] = []) async throws {
        for filter in [replyTopic] + filters { try client.subscribe(filter, qos: 1) }
        Task { await consume() }
        try client.connect()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if !state.isConnected { state.connected = continuation }
                return state.isConnected
            }
            if ready { continuation.resume() }
        }
    }

    /// Publishes an MQTT 5 request and waits for its reply (10 s at most); returns the reply and
    /// the time from just before the publish to its arrival, in ns.
    func request(_ topic: String, _ text: String) async throws -> (payload: [UInt8], latency: Int64) {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: BenchError("no reply to \(topic) within 10 s"))
        }
        defer { timeout.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let sentAt = Nanos.monotonic()
            state.withLock { $0.pending[id] = (continuation, sentAt) }
            do {
                try client.publish(MQTTMessage(topic: topic, payload: Array(text.utf8), qos: 1, responseTopic: replyTopic,
                                               correlationData: withUnsafeBytes(of: id.littleEndian) { Array($0) }))
            } catch {
                state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
            }
        }
    }

    /// A request whose reply must say `"ok":true`; returns the reply's JSON and its latency.
    @discardableResult
    func command(_ topic: String, _ text: String) async throws -> (json: [String: Any], latency: Int64) {
        let reply = try await request(topic, text)
        guard let json = (try? JSONSerialization.jsonObject(with: Data(reply.payload))) as? [String: Any], json["ok"] as? Bool == true else {
            throw BenchError("\(topic) was refused: \(String(decoding: reply.payload.prefix(300), as: UTF8.self))")
        }
        return (json, reply.latency)
    }

    /// Publishes without waiting for anything.
    func publish(_ topic: String, _ text: String) {
        try? client.publish(MQTTMessage(topic: topic, payload: Array(text.utf8), qos: 1))
    }

    /// Calls `handler` for every arrival until it returns true or the returned id is removed.
    func watch(_ handler: @escaping Handler) -> UInt64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            state.handlers[state.nextID] = handler
            return state.nextID
        }
    }

    func unwatch(_ id: UInt64) { _ = state.withLock { $0.handlers.removeValue(forKey: id) } }

    /// Starts watching now for the first arrival that `matches`; `await` the result for at most `seconds`.
    func expect(within seconds: Double = 5, _ matches: @escaping @Sendable (Arrival) -> Bool) -> Task<Arrival, any Error> {
        let (stream, sink) = AsyncStream.makeStream(of: Arrival.self)
        let id = watch { arrival in
            guard matches(arrival) else { return false }
            sink.yield(arrival)
            return true
        }
        return Task {
            defer { unwatch(id) }
            let timer = Task { try await Task.sleep(for: .seconds(seconds)); sink.finish() }
            defer { timer.cancel() }
            for await arrival in stream { return arrival }
            throw BenchError("nothing arrived within \(seconds) s")
        }
    }

    func stop() async { await client.disconnect() }

    private func consume() async {
        for await event in client.events {
            guard case .message(let message) = event else {
                let waiter = state.withLock { state in
                    if case .connected = event { state.isConnected = true } else { state.isConnected = false }
                    return state.connected.take()
                }
                waiter?.resume()
                continue
            }
            let monotonic = Nanos.monotonic()
            if message.topic.hasPrefix("bench/echo/"), let responseTopic = message.responseTopic {
                let size = Int(message.topic.dropFirst("bench/echo/".count)) ?? 0
                let payload = state.withLock { state in
                    if let payload = state.echoPayloads[size] { return payload }
                    state.echoPayloads[size] = [UInt8](repeating: UInt8(ascii: " "), count: size)
                    return state.echoPayloads[size]!
                }
                try? client.publish(MQTTMessage(topic: responseTopic, payload: payload, qos: 1, correlationData: message.correlationData))
            } else if message.topic == replyTopic, let data = message.correlationData, data.count == 8 {
                let id = data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                if let pending = state.withLock({ $0.pending.removeValue(forKey: id) }) {
                    pending.continuation.resume(returning: (message.payload, monotonic - pending.sentAt))
                }
            } else {
                let arrival = Arrival(topic: message.topic, payload: message.payload, monotonic: monotonic, realtime: Nanos.realtime())
                for (id, handler) in state.withLock({ $0.handlers }) where handler(arrival) { unwatch(id) }
            }
        }
        for request in state.withLock({ state in defer { state.pending = [:] }; return state.pending.values }) {
            request.continuation.resume(throwing: BenchError("the bench's MQTT connection closed"))
        }
    }
}
