import CMosquitto
import Glibc
import LinuxSystem

/// A load generator for benchmarks: many MQTT 5 connections, each a requester that sends a request,
/// waits for its reply (matched by correlation data on the connection's own response topic) and
/// then sends the next one, all driven by one thread.
///
/// ``MQTTClient`` gives every connection a network thread and hands each message to Swift
/// concurrency; a hundred of them, measuring a daemon on the same cores, spend more CPU than the
/// broker does. Here one thread waits in `poll(2)` on every socket and drives libmosquitto with
/// `mosquitto_loop_read`, `mosquitto_loop_write` and `mosquitto_loop_misc`; a reply is handled, and
/// the next request published, in the message callback. (libmosquitto 2.0 still writes a byte to
/// an internal socket pair for every packet it queues, which only `mosquitto_loop` reads: one
/// wasted `write(2)` each, failing with `EAGAIN` once the pair is full; 2.1's
/// `MOSQ_OPT_DISABLE_SOCKETPAIR` would remove it.)
public enum MQTTRequestLoad {
    /// What a run measured.
    public struct Outcome: Sendable {
        /// Round trip of every reply that `accept` took (publish to arrival), in nanoseconds.
        public var latencies: [Int64] = []
        /// Replies that `accept` refused.
        public var refused = 0
        /// Requests with no reply within the timeout.
        public var lost = 0
        /// Per requester, the last reply that `accept` took.
        public var lastAccepted: [[UInt8]?] = []
        /// From the first request to the last reply, in nanoseconds.
        public var wall: Int64 = 0

        /// Accepted replies per second.
        public var rate: Double { wall > 0 ? Double(latencies.count) / (Double(wall) / 1e9) : 0 }
    }

    /// Connects `requesters` clients (`<clientIDPrefix>-<n>`, each subscribed to
    /// `<clientIDPrefix>/reply/<n>`), lets each send `requestsPerRequester` requests (QoS 1) one
    /// after the other, all at once, then disconnects them. Runs on a thread of its own.
    ///
    /// - Parameters:
    ///   - request: the topic and payload of requester `n`'s `i`-th request.
    ///   - accept: whether a reply counts as a success (it is counted as refused otherwise).
    ///   - replyTimeout: a request with no reply by then is counted as lost, and the next is sent.
    /// - Throws: ``MQTTError`` when a connection cannot be made or set up within 10 s, or is lost.
    public static func run(
        host: String, port: Int, requesters: Int, requestsPerRequester: Int, clientIDPrefix: String,
        replyTimeout: Duration = .seconds(10),
        request: @escaping @Sendable (_ requester: Int, _ iteration: Int) -> (topic: String, payload: [UInt8]),
        accept: @escaping @Sendable (_ reply: [UInt8]) -> Bool
    ) async throws(MQTTError) -> Outcome {
        let broker = "\(host):\(port)"
        let result: Result<Outcome, MQTTError> = await withCheckedContinuation { continuation in
            do {
                try startDedicatedThread(named: "mqtt-load") {
                    let load = LoadRun(broker: broker, requestsPerRequester: requestsPerRequester,
                                       replyTimeout: replyTimeout, request: request, accept: accept)
                    continuation.resume(returning: Result { () throws(MQTTError) in
                        defer { load.close() }
                        try load.connect(host: host, port: port, requesters: requesters, clientIDPrefix: clientIDPrefix)
                        return try load.run()
                    })
                }
            } catch {
                continuation.resume(returning: .failure(MQTTError(code: .outOfMemory, message: "the load generator could not start its thread (\(error)): free memory or raise the process's thread limit")))
            }
        }
        return try result.get()
    }
}

/// One requester: its libmosquitto handle and where its closed loop stands.
private final class Requester {
    let number: Int
    let replyTopic: String
    unowned let load: LoadRun
    var handle: OpaquePointer?
    var subscribed = false
    var sent = 0
    /// The correlation of the request awaiting its reply, and when it was published.
    var awaiting: UInt64?
    var sentAt: Int64 = 0
    var lastAccepted: [UInt8]?

    init(number: Int, replyTopic: String, load: LoadRun) {
        self.number = number
        self.replyTopic = replyTopic
        self.load = load
    }

    var isDone: Bool { sent == load.requestsPerRequester && awaiting == nil }

    static func from(_ userData: UnsafeMutableRawPointer?) -> Requester {
        Unmanaged<Requester>.fromOpaque(userData!).takeUnretainedValue()
    }
}

/// The state of one run; used only by the thread the run is on.
private final class LoadRun {
    let broker: String
    let requestsPerRequester: Int
    let replyTimeout: Int64
    let request: @Sendable (Int, Int) -> (topic: String, payload: [UInt8])
    let accept: @Sendable ([UInt8]) -> Bool
    var requesters: [Requester] = []
    var outcome = MQTTRequestLoad.Outcome()
    /// The first failure a callback saw; the loop throws it.
    var failure: MQTTError?
    private var pollSet: [pollfd] = []
    private var lastHousekeeping: Int64 = 0

    init(broker: String, requestsPerRequester: Int, replyTimeout: Duration,
         request: @escaping @Sendable (Int, Int) -> (topic: String, payload: [UInt8]),
         accept: @escaping @Sendable ([UInt8]) -> Bool) {
        self.broker = broker
        self.requestsPerRequester = requestsPerRequester
        let (seconds, attoseconds) = replyTimeout.components
        self.replyTimeout = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        self.request = request
        self.accept = accept
    }

    /// `mosquitto_new` and `mosquitto_connect_bind_v5` for each requester, then waits until every
    /// one is connected and subscribed (`mosquitto_subscribe` from the connect callback).
    func connect(host: String, port: Int, requesters count: Int, clientIDPrefix: String) throws(MQTTError) {
        _ = MQTTClient.libraryInitialization
        for number in 0..<count {
            let requester = Requester(number: number, replyTopic: "\(clientIDPrefix)/reply/\(number)", load: self)
            requesters.append(requester)
            guard let handle = mosquitto_new("\(clientIDPrefix)-\(number)", true, Unmanaged.passUnretained(requester).toOpaque()) else {
                throw MQTTError(code: .outOfMemory, message: "creating the load generator's client \(number) failed: free memory")
            }
            requester.handle = handle
            mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
            // Without it, Nagle's algorithm holds a request back until the broker's delayed ACK.
            mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
            Self.installCallbacks(handle)
            let result = mosquitto_connect_bind_v5(handle, host, Int32(port), 60, nil, nil)
            guard result == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(mosquittoCode: result, errno: Self.meaningfulErrno(after: result), during: .connect, broker: broker)
            }
        }
        let deadline = ClockReading.nanoseconds(CLOCK_MONOTONIC) + 10_000_000_000
        while !requesters.allSatisfy(\.subscribed) {
            guard ClockReading.nanoseconds(CLOCK_MONOTONIC) < deadline else {
                throw MQTTError(code: .connectionFailed, message: "the load generator's connections to \(broker) were not all set up within 10 s: is the broker overloaded, or limiting connections?")
            }
            try pump()
        }
    }

    /// Sends every requester's first request and pumps until each has had all its replies.
    func run() throws(MQTTError) -> MQTTRequestLoad.Outcome {
        outcome.lastAccepted = Array(repeating: nil, count: requesters.count)
        let start = ClockReading.nanoseconds(CLOCK_MONOTONIC)
        for requester in requesters { sendNext(requester) }
        while !requesters.allSatisfy(\.isDone) {
            try pump()
        }
        outcome.wall = ClockReading.nanoseconds(CLOCK_MONOTONIC) - start
        return outcome
    }

    /// `mosquitto_disconnect` and `mosquitto_destroy` for every requester.
    func close() {
        for requester in requesters {
            guard let handle = requester.handle else { continue }
            mosquitto_disconnect(handle)
            mosquitto_destroy(handle)
            requester.handle = nil
        }
    }

    /// One `poll(2)` over every socket (100 ms at most), then reads and writes what is ready; once
    /// a second, `mosquitto_loop_misc` (keepalive) and the reply timeouts.
    private func pump() throws(MQTTError) {
        pollSet.removeAll(keepingCapacity: true)
        for requester in requesters {
            let handle = requester.handle!
            let events = Int16(POLLIN) | (mosquitto_want_write(handle) ? Int16(POLLOUT) : 0)
            pollSet.append(pollfd(fd: mosquitto_socket(handle), events: events, revents: 0))
        }
        if poll(&pollSet, nfds_t(pollSet.count), 100) < 0, errno != EINTR {
            throw MQTTError(code: .connectionFailed, message: "poll on the load generator's sockets failed (\(String(cString: strerror(errno))))")
        }
        for (index, requester) in requesters.enumerated() {
            let handle = requester.handle!
            let ready = pollSet[index].revents
            if ready & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                try check(mosquitto_loop_read(handle, 1))
            }
            if ready & Int16(POLLOUT) != 0 || mosquitto_want_write(handle) {
                try check(mosquitto_loop_write(handle, 1))
            }
        }
        if let failure { throw failure }
        let now = ClockReading.nanoseconds(CLOCK_MONOTONIC)
        guard now - lastHousekeeping >= 1_000_000_000 else { return }
        lastHousekeeping = now
        for requester in requesters {
            try check(mosquitto_loop_misc(requester.handle!))
            if requester.awaiting != nil, now - requester.sentAt > replyTimeout {
                outcome.lost += 1
                requester.awaiting = nil
                sendNext(requester)
            }
        }
    }

    private func check(_ result: Int32) throws(MQTTError) {
        guard result != MOSQ_ERR_SUCCESS.rawValue else { return }
        throw MQTTError(mosquittoCode: result, errno: Self.meaningfulErrno(after: result), during: .connectionEnded, broker: broker)
    }

    /// `errno`, which means something only after `MOSQ_ERR_ERRNO` (libmosquitto's other calls
    /// leave it as they find it, e.g. `EAGAIN` from its internal socket pair).
    static func meaningfulErrno(after result: Int32) -> Int32 {
        result == MOSQ_ERR_ERRNO.rawValue ? Glibc.errno : 0
    }

    /// Publishes the requester's next request (`mosquitto_publish_v5` with its response topic and
    /// the request's number as correlation data), if it has one left.
    func sendNext(_ requester: Requester) {
        guard requester.sent < requestsPerRequester, failure == nil else { return }
        let (topic, payload) = request(requester.number, requester.sent)
        let correlation = UInt64(requester.sent)
        requester.sent += 1
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), requester.replyTopic)
        withUnsafeBytes(of: correlation.littleEndian) { bytes in
            _ = mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress, UInt16(bytes.count))
        }
        requester.awaiting = correlation
        requester.sentAt = ClockReading.nanoseconds(CLOCK_MONOTONIC)
        let result = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(requester.handle, nil, topic, Int32(bytes.count), bytes.baseAddress, 1, false, properties)
        }
        if result != MOSQ_ERR_SUCCESS.rawValue, failure == nil {
            failure = MQTTError(mosquittoCode: result, errno: Self.meaningfulErrno(after: result), during: .publish(topic: topic), broker: broker)
        }
    }

    /// A reply: its latency and verdict are counted, and the requester's next request goes out.
    func replyArrived(to requester: Requester, correlation: UInt64, payload: [UInt8]) {
        guard requester.awaiting == correlation else { return }  // late, after its timeout
        let latency = ClockReading.nanoseconds(CLOCK_MONOTONIC) - requester.sentAt
        requester.awaiting = nil
        if accept(payload) {
            outcome.latencies.append(latency)
            outcome.lastAccepted[requester.number] = payload
        } else {
            outcome.refused += 1
        }
        sendNext(requester)
    }

    /// Capture-free closures, so that they convert to C function pointers; the user data is the
    /// ``Requester``, kept alive by the run's `requesters`.
    private static func installCallbacks(_ handle: OpaquePointer) {
        mosquitto_connect_v5_callback_set(handle) { handle, userData, result, _, _ in
            let requester = Requester.from(userData)
            guard result == 0 else {
                requester.load.failure = requester.load.failure
                    ?? MQTTError(mosquittoCode: result, during: .connack, broker: requester.load.broker)
                return
            }
            let subscribed = mosquitto_subscribe(handle, nil, requester.replyTopic, 1)
            if subscribed != MOSQ_ERR_SUCCESS.rawValue {
                requester.load.failure = requester.load.failure
                    ?? MQTTError(mosquittoCode: subscribed, during: .subscribe(filter: requester.replyTopic), broker: requester.load.broker)
            }
        }
        mosquitto_subscribe_v5_callback_set(handle) { _, userData, _, count, grantedQoS, _ in
            let requester = Requester.from(userData)
            // A refused subscription (reason code 0x80 and up) would leave every request to time out.
            guard count == 1, let grantedQoS, grantedQoS[0] < 0x80 else {
                requester.load.failure = requester.load.failure
                    ?? MQTTError(code: .connectionRefused, message: "the broker \(requester.load.broker) refused the load generator's subscription to \(requester.replyTopic): allow it in the broker's ACL")
                return
            }
            requester.subscribed = true
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, userData, result, _ in
            let requester = Requester.from(userData)
            requester.load.failure = requester.load.failure
                ?? MQTTError(mosquittoCode: result == 0 ? MOSQ_ERR_CONN_LOST.rawValue : result, during: .connectionEnded, broker: requester.load.broker)
        }
        mosquitto_message_v5_callback_set(handle) { _, userData, message, properties in
            guard let message = message?.pointee, let properties else { return }
            var data: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            guard mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil,
                  let data else { return }
            defer { free(data) }
            guard length == 8 else { return }
            let correlation = UInt64(littleEndian: data.loadUnaligned(as: UInt64.self))
            let payload = message.payloadlen > 0
                ? Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))) : []
            let requester = Requester.from(userData)
            requester.load.replyArrived(to: requester, correlation: correlation, payload: payload)
        }
    }
}
