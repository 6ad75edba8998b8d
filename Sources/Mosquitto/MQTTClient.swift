import CMosquitto
import Dispatch
import FoundationEssentials
import Glibc
import LinuxSystem
import Logging
import Synchronization

/// An MQTT client over libmosquitto that keeps itself connected.
///
/// - A dedicated network thread (not Swift's cooperative pool) drives libmosquitto with
///   `mosquitto_loop_read`, `mosquitto_loop_write` and `mosquitto_loop_misc` around its own poll(2)
///   (with TLS, `mosquitto_loop`); callbacks run on it and yield into ``events``. A burst of
///   publishes wakes it once and leaves in as few TCP segments as the socket allows (see
///   ``serviceConnection(timeoutMilliseconds:)``).
/// - After every (re)connection it sends all subscriptions again and flushes the messages that were
///   published while disconnected; ``MQTTEvent/connected(sessionPresent:)`` follows once the broker
///   has acknowledged the subscriptions.
/// - Publishes made while disconnected are never handed to libmosquitto (which would queue QoS 1 and 2
///   without bound and drop QoS 0): they wait in a bounded buffer, see ``MQTTConfiguration/outgoingBufferLimit``.
/// - If the broker refuses MQTT 5, the client falls back to MQTT 3.1.1 by itself.
///
/// Why not `mosquitto_loop_start`: its thread runs `mosquitto_loop_forever`, which returns for good on
/// any "fatal" result — a DNS failure, and every refused MQTT 5 CONNACK, including the one that asks
/// for a protocol fallback — leaving the client silently offline. This client's own loop retries
/// those with a capped backoff instead.
public final class MQTTClient: Sendable {
    /// Connection changes and received messages, in the order they happened. Consume it from one task.
    /// It is unbounded (nothing is dropped) and finishes after ``disconnect()``.
    public let events: AsyncStream<MQTTEvent>

    private let eventSink: AsyncStream<MQTTEvent>.Continuation
    private let configuration: MQTTConfiguration
    private let logger: Logger
    private let handle: MosquittoHandle
    private let state: Mutex<State>
    /// Signalled by ``disconnect()`` to cut short the network thread's wait between reconnect attempts.
    private let reconnectWaitInterrupt = DispatchSemaphore(value: 0)
    /// Wakes the network thread from poll(2) when a packet was queued from another thread.
    private let networkWake: EventSignal

    /// libmosquitto needs `mosquitto_lib_init` once per process before any other call (``MQTTRequestLoad``
    /// too); a static `let` is initialised exactly once, thread-safely, on first use.
    static let libraryInitialization: Int32 = mosquitto_lib_init()

    /// How long one round of the network thread may wait for network activity. Publishing,
    /// subscribing and disconnecting wake it early, so this only bounds how often keepalive is
    /// checked (`mosquitto_loop_misc`, which counts whole seconds): a PINGREQ leaves at most a
    /// quarter of the keepalive and a second after it is due, inside the broker's 1.5 × keepalive
    /// (keepalive is 5 s at least), while an idle node wakes a few times a minute.
    private static func loopTimeoutMilliseconds(keepAlive: Int) -> Int32 {
        Int32(max(1000, keepAlive * 1000 / 4))
    }

    /// Creates the libmosquitto client (`mosquitto_new`) and applies the configuration
    /// (`mosquitto_int_option`, `mosquitto_username_pw_set`, `mosquitto_will_set`, `mosquitto_tls_set`,
    /// `mosquitto_tls_insecure_set`). Nothing touches the network until ``connect()``.
    ///
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/invalidConfiguration`` or ``MQTTError/Code/tls``
    ///   when a setting is unusable.
    public init(configuration: MQTTConfiguration, logger: Logger) throws(MQTTError) {
        _ = Self.libraryInitialization
        var logger = logger
        logger[metadataKey: "mqtt.broker"] = "\(configuration.brokerAddress)"
        logger[metadataKey: "mqtt.client_id"] = "\(configuration.clientID)"
        self.logger = logger
        self.configuration = configuration
        // Before the handle: a throwing init does not run deinit, which destroys the handle.
        do {
            self.networkWake = try EventSignal(waking: "the MQTT network thread")
        } catch {
            throw MQTTError(code: .outOfMemory, message: "the MQTT client for \(configuration.brokerAddress) could not be created: \(error.message); raise the process's descriptor limit or free memory")
        }
        self.handle = try MosquittoHandle(configuration: configuration)
        self.state = Mutex(State(
            protocolVersion: configuration.protocolVersion,
            outgoing: OutgoingBuffer(limit: configuration.outgoingBufferLimit)
        ))
        (events, eventSink) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .unbounded)
        installCallbacks()
    }

    deinit {
        // Only reached once the network thread has ended (it holds a strong reference), so no
        // callback can run any more; the log callback is cleared first because it can fire on any thread.
        mosquitto_log_callback_set(handle.pointer, nil)
        mosquitto_destroy(handle.pointer)
    }

    /// Whether a connection is up and set up (subscriptions sent, buffer flushed): publishes go
    /// straight to the broker. It turns true just before ``MQTTEvent/connected(sessionPresent:)``
    /// is delivered, which also waits for the SUBACKs.
    public var isConnected: Bool {
        state.withLock { $0.link == .up }
    }

    /// The protocol version in use: ``MQTTConfiguration/protocolVersion`` until a fallback to 3.1.1.
    public var protocolVersion: MQTTProtocolVersion {
        state.withLock { $0.protocolVersion }
    }

    /// Starts the network thread and returns at once. The thread connects (`mosquitto_connect_async`,
    /// whose host lookup and TLS setup block, hence not on the caller's thread) and keeps reconnecting
    /// (`mosquitto_reconnect_async`) for the life of the client.
    ///
    /// Connection failures are not thrown: a broker that cannot be reached yet (refused, unreachable,
    /// DNS not up) is logged as a warning and retried; a failure that needs a fix (TLS files, for
    /// instance) is logged as an error and retried too. Watch ``events`` for
    /// ``MQTTEvent/connected(sessionPresent:)``. Settings are checked earlier, by ``init(configuration:logger:)``.
    ///
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/alreadyConnected`` or ``MQTTError/Code/clientClosed``
    ///   when the client was already started or disconnected, or ``MQTTError/Code/outOfMemory`` when
    ///   its thread cannot be started (`pthread_create`).
    public func connect() throws(MQTTError) {
        try state.withLock { state throws(MQTTError) in
            switch state.lifecycle {
            case .idle:
                state.lifecycle = .running
            case .running:
                throw MQTTError(code: .alreadyConnected, message: "connect() was called twice on the client for \(configuration.brokerAddress): call it once; the client reconnects by itself")
            case .stopping, .stopped:
                throw Self.closedError(configuration)
            }
        }
        do {
            try startDedicatedThread(named: "mqtt-network") { [self] in runNetworkLoop() }
        } catch {
            // A disconnect() that came meanwhile waits for a thread that never started: end it.
            let disconnecting = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                guard state.lifecycle == .stopping else {
                    state.lifecycle = .idle
                    return nil
                }
                state.lifecycle = .stopped
                defer { state.networkThreadWaiters = [] }
                return state.networkThreadWaiters
            }
            if let disconnecting {
                finishEvents(discarding: state.withLock { $0.outgoing.count })
                for waiter in disconnecting { waiter.resume() }
            }
            throw MQTTError(code: .outOfMemory, message: "the MQTT client for \(configuration.brokerAddress) could not start its network thread (\(error)); free memory or raise the process's thread limit, then connect again")
        }
    }

    /// Subscribes to `filter` now if connected, and again after every reconnection: the broker may
    /// have lost the subscription. Subscribing again to the same filter replaces its QoS and options.
    /// Calls `mosquitto_sub_topic_check` and `mosquitto_subscribe`, or `mosquitto_subscribe_v5` with
    /// `MQTT_SUB_OPT_NO_LOCAL` for `noLocal` on an MQTT 5 connection.
    ///
    /// - Parameter noLocal: the broker does not send back what this client publishes to `filter`
    ///   (MQTT 5's No Local; ignored on 3.1.1, which has no such option). Mosquitto still sends the
    ///   retained messages at subscription, this client's own included.
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/invalidArgument`` for a malformed filter or QoS,
    ///   or ``MQTTError/Code/clientClosed`` after ``disconnect()``.
    public func subscribe(_ filter: String, qos: Int, noLocal: Bool = false) throws(MQTTError) {
        try Self.validate(filter: filter, qos: qos, broker: configuration.brokerAddress)
        try state.withLock { state throws(MQTTError) in
            guard !state.isClosing else { throw Self.closedError(configuration) }
            let subscription = Subscription(filter: filter, qos: qos, noLocal: noLocal)
            if let index = state.subscriptions.firstIndex(where: { $0.filter == filter }) {
                state.subscriptions[index] = subscription
            } else {
                state.subscriptions.append(subscription)
            }
            // While down or being set up, the connection setup sends every subscription.
            guard state.link == .up else { return }
            try sendSubscription(subscription, state: &state)
        }
    }

    /// Publishes `message` (`mosquitto_publish_v5`). On an MQTT 5 connection its `responseTopic` and
    /// `correlationData` travel as properties (`mosquitto_property_add_string`,
    /// `mosquitto_property_add_binary`); on MQTT 3.1.1 they are left out.
    ///
    /// While disconnected the message is buffered instead (retained: latest per topic; others: a FIFO
    /// bounded by ``MQTTConfiguration/outgoingBufferLimit``) and sent, in order, on the next connection.
    ///
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/invalidArgument`` for a malformed topic or QoS, or a
    ///   message that cannot be encoded; ``MQTTError/Code/clientClosed`` after ``disconnect()``.
    public func publish(_ message: MQTTMessage) throws(MQTTError) {
        try Self.validate(message, broker: configuration.brokerAddress)
        if try state.withLock({ state throws(MQTTError) in try enqueue(message, state: &state) }) {
            networkWake.signal()
        }
    }

    /// Publishes `messages` in order, each as ``publish(_:)`` does, and wakes the network thread
    /// once for all of them, so that they leave together: in one TCP segment when they fit.
    ///
    /// - Returns: the messages that could not be published, each with the error ``publish(_:)``
    ///   would have thrown for it (the invalid ones first); all the others were published.
    public func publish(_ messages: [MQTTMessage]) -> [(message: MQTTMessage, error: MQTTError)] {
        var failures: [(message: MQTTMessage, error: MQTTError)] = []
        var valid: [MQTTMessage] = []
        valid.reserveCapacity(messages.count)
        for message in messages {
            do throws(MQTTError) {
                try Self.validate(message, broker: configuration.brokerAddress)
                valid.append(message)
            } catch {
                failures.append((message, error))
            }
        }
        let handedOver = state.withLock { state in
            var handedOver = false
            for message in valid {
                do throws(MQTTError) {
                    if try enqueue(message, state: &state) { handedOver = true }
                } catch {
                    failures.append((message, error))
                }
            }
            return handedOver
        }
        if handedOver { networkWake.signal() }
        return failures
    }

    /// Under the state lock: hands `message` to libmosquitto, or keeps it in the buffer while
    /// there is no connection. Returns whether libmosquitto took it (the network thread must then
    /// be woken to send it). Handing over under the lock keeps a publish racing with the flush of
    /// the buffer after a reconnection from overtaking the buffered messages.
    private func enqueue(_ message: MQTTMessage, state: inout State) throws(MQTTError) -> Bool {
        guard !state.isClosing else { throw Self.closedError(configuration) }
        guard state.link == .up, try handOver(message, state: &state) == .accepted else {
            state.outgoing.append(message)
            return false
        }
        return true
    }

    /// Whether `topic` matches the subscription filter `filter` (with `+` and `#` wildcards).
    /// Calls `mosquitto_topic_matches_sub`; a malformed filter or topic matches nothing.
    public static func topic(_ topic: String, matches filter: String) -> Bool {
        var matches = false
        return mosquitto_topic_matches_sub(filter, topic, &matches) == MOSQ_ERR_SUCCESS.rawValue && matches
    }

    /// Ends the connection cleanly and stops the client for good.
    ///
    /// Waits up to ``MQTTConfiguration/disconnectGracePeriod`` for the broker to acknowledge QoS 1 and 2
    /// publishes already handed over (such as your own offline status), then sends DISCONNECT
    /// (`mosquitto_disconnect`) and waits for the network thread to end. A clean DISCONNECT means the
    /// broker does NOT publish the will: publish your offline status yourself before calling this.
    /// Messages still buffered are discarded (and counted in the log). ``events`` finishes.
    public func disconnect() async {
        enum Shutdown {
            case nothingToDo, finishEvents, stopNetworkThread, awaitNetworkThread
        }
        let shutdown = state.withLock { state -> Shutdown in
            switch state.lifecycle {
            case .idle:
                state.lifecycle = .stopped
                return .finishEvents
            case .running:
                state.lifecycle = .stopping
                return .stopNetworkThread
            case .stopping:
                return .awaitNetworkThread
            case .stopped:
                return .nothingToDo
            }
        }
        switch shutdown {
        case .nothingToDo:
            return
        case .finishEvents:
            finishEvents(discarding: state.withLock { $0.outgoing.count })
        case .stopNetworkThread:
            await waitForAcknowledgements()
            mosquitto_disconnect(handle.pointer)
            networkWake.signal()
            reconnectWaitInterrupt.signal()
            await waitForNetworkThread()
        case .awaitNetworkThread:
            await waitForNetworkThread()
        }
    }
}

// MARK: - State

extension MQTTClient {
    fileprivate struct Subscription {
        let filter: String
        let qos: Int
        let noLocal: Bool
    }

    fileprivate enum Lifecycle {
        case idle, running, stopping, stopped
    }

    fileprivate enum Link: Equatable {
        /// No connection, or connecting.
        case down
        /// CONNACK accepted; subscriptions and the buffer are sent after the current round of the network thread.
        case awaitingSetup(sessionPresent: Bool)
        case up
    }

    fileprivate struct State {
        var lifecycle: Lifecycle = .idle
        var link: Link = .down
        var protocolVersion: MQTTProtocolVersion
        var subscriptions: [Subscription] = []
        /// SUBSCRIBE message ids waiting for their SUBACK, to name the filter if the broker refuses it.
        var subscriptionsAwaitingAcknowledgement: [Int32: String] = [:]
        /// Set between a connection setup and the SUBACKs of its resubscriptions: `.connected` is
        /// delivered once the broker has acknowledged them all.
        var connectedEventAwaitingSubscriptions: (sessionPresent: Bool, messageIDs: Set<Int32>)?
        var outgoing: OutgoingBuffer
        /// Message ids of QoS 1 and 2 publishes handed to libmosquitto and not acknowledged yet.
        var unacknowledgedPublishes: Set<Int32> = []
        var acknowledgementWaiter: CheckedContinuation<Void, Never>?
        var networkThreadWaiters: [CheckedContinuation<Void, Never>] = []
        /// Why the last connection attempt failed, recorded by callbacks for the network thread.
        var connectionFailure: MQTTError?

        var isClosing: Bool { lifecycle == .stopping || lifecycle == .stopped }
    }

    fileprivate enum HandOverResult {
        case accepted
        /// libmosquitto has no socket (QoS 0 only: it keeps QoS 1 and 2 messages itself).
        case notConnected
    }

    private static func closedError(_ configuration: MQTTConfiguration) -> MQTTError {
        MQTTError(code: .clientClosed, message: "the MQTT client for \(configuration.brokerAddress) was disconnected: create a new client to connect again")
    }
}

// MARK: - Talking to libmosquitto (callers hold the state lock)

extension MQTTClient {
    /// Calls `mosquitto_publish_v5`. Runs under the state lock: libmosquitto's publish path takes only
    /// its own message and packet mutexes, never the callback mutex that the network thread holds
    /// while it runs callbacks (which take the state lock), so the two locks cannot deadlock.
    private func handOver(_ message: MQTTMessage, state: inout State) throws(MQTTError) -> HandOverResult {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        // MQTT 3.1.1 has no properties: responseTopic and correlationData are left out there.
        if state.protocolVersion == .v5 {
            try addProperties(of: message, to: &properties)
        }
        var messageID: Int32 = 0
        let result = message.payload.withUnsafeBytes { payload in
            mosquitto_publish_v5(
                handle.pointer, &messageID, message.topic, Int32(payload.count), payload.baseAddress,
                Int32(message.qos), message.retain, properties
            )
        }
        switch result {
        case MOSQ_ERR_SUCCESS.rawValue:
            break
        case MOSQ_ERR_NO_CONN.rawValue where message.qos == 0:
            return .notConnected
        case MOSQ_ERR_NO_CONN.rawValue:
            // The connection dropped a moment ago; libmosquitto has queued this QoS 1/2 message and
            // sends it after reconnecting.
            break
        default:
            throw MQTTError(mosquittoCode: result, during: .publish(topic: message.topic), broker: configuration.brokerAddress)
        }
        if message.qos > 0 {
            state.unacknowledgedPublishes.insert(messageID)
        }
        return .accepted
    }

    private func addProperties(of message: MQTTMessage, to properties: inout OpaquePointer?) throws(MQTTError) {
        let operation = MosquittoOperation.publish(topic: message.topic)
        if let responseTopic = message.responseTopic {
            let result = mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), responseTopic)
            guard result == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(mosquittoCode: result, during: operation, broker: configuration.brokerAddress)
            }
        }
        if let correlationData = message.correlationData {
            let result = correlationData.withUnsafeBytes { bytes in
                mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress, UInt16(bytes.count))
            }
            guard result == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError(mosquittoCode: result, during: operation, broker: configuration.brokerAddress)
            }
        }
    }

    /// Calls `mosquitto_subscribe` (`mosquitto_subscribe_v5` for No Local on MQTT 5) and returns the
    /// SUBSCRIBE's message id (nil without a connection: the next connection setup sends it). Same
    /// locking argument as ``handOver(_:state:)``.
    @discardableResult
    private func sendSubscription(_ subscription: Subscription, state: inout State) throws(MQTTError) -> Int32? {
        var messageID: Int32 = 0
        let result = subscription.noLocal && state.protocolVersion == .v5
            ? mosquitto_subscribe_v5(handle.pointer, &messageID, subscription.filter, Int32(subscription.qos), Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue), nil)
            : mosquitto_subscribe(handle.pointer, &messageID, subscription.filter, Int32(subscription.qos))
        switch result {
        case MOSQ_ERR_SUCCESS.rawValue:
            state.subscriptionsAwaitingAcknowledgement[messageID] = subscription.filter
            networkWake.signal()
            return messageID
        case MOSQ_ERR_NO_CONN.rawValue:
            return nil
        default:
            throw MQTTError(mosquittoCode: result, during: .subscribe(filter: subscription.filter), broker: configuration.brokerAddress)
        }
    }

    private static func validate(filter: String, qos: Int, broker: @autoclosure () -> String) throws(MQTTError) {
        guard (0...2).contains(qos) else {
            throw MQTTError(code: .invalidArgument, message: "QoS \(qos) for '\(filter)' is invalid: use 0, 1 or 2")
        }
        let result = mosquitto_sub_topic_check(filter)
        guard result == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(mosquittoCode: result, during: .subscribe(filter: filter), broker: broker())
        }
    }

    /// `broker` is only formatted for an error: this runs for every publish.
    private static func validate(_ message: MQTTMessage, broker: @autoclosure () -> String) throws(MQTTError) {
        guard (0...2).contains(message.qos) else {
            throw MQTTError(code: .invalidArgument, message: "QoS \(message.qos) for '\(message.topic)' is invalid: use 0, 1 or 2")
        }
        let result = mosquitto_pub_topic_check(message.topic)
        guard result == MOSQ_ERR_SUCCESS.rawValue, !message.topic.isEmpty else {
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
}

// MARK: - Network thread

extension MQTTClient {
    /// The body of the network thread: `mosquitto_connect_async`, then
    /// ``serviceConnection(timeoutMilliseconds:)`` while connected; after a failure, a capped exponential backoff and `mosquitto_reconnect_async`.
    /// Ends once ``disconnect()`` has asked for it and the socket is closed.
    private func runNetworkLoop() {
        startConnecting {
            mosquitto_connect_async(handle.pointer, configuration.host, Int32(configuration.port), Int32(configuration.keepAlive))
        }
        var failedAttempts = 0
        var lastReportedFailure: String?
        var connectedAt: ContinuousClock.Instant?
        while true {
            let result = serviceConnection(timeoutMilliseconds: Self.loopTimeoutMilliseconds(keepAlive: configuration.keepAlive))
            let loopErrno = errno
            if completeConnectionSetup() {
                connectedAt = .now
            }
            if result == MOSQ_ERR_SUCCESS.rawValue {
                continue
            }
            let (stopRequested, recordedFailure) = state.withLock { state in
                defer { state.connectionFailure = nil }
                return (state.lifecycle == .stopping, state.connectionFailure)
            }
            if stopRequested {
                break
            }
            let failure = recordedFailure
                ?? MQTTError(mosquittoCode: result, errno: loopErrno, during: .connectionEnded, broker: configuration.brokerAddress)
            var delay: Duration
            if failure.mosquittoCode == Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue), fallBackToMQTT311() {
                delay = .zero
            } else if let connectedAt {
                // The loss itself was logged by the disconnect callback. A connection that ends
                // soon after it was accepted counts as a failed attempt, so that the wait grows
                // instead of reconnecting at once forever (two clients with one client id take
                // the session from each other; a broker may accept and then drop).
                if connectedAt.duration(to: .now) >= Self.stableConnection {
                    failedAttempts = 0
                } else {
                    failedAttempts += 1
                    if failedAttempts == Self.shortConnectionsBeforeWarning { warnAboutShortConnections() }
                }
                delay = reconnectDelay(afterFailedAttempts: failedAttempts, atMost: configuration.maximumDelayAfterShortConnections)
                lastReportedFailure = failure.message
            } else {
                delay = reconnectDelay(afterFailedAttempts: failedAttempts, atMost: configuration.maximumReconnectDelay)
                failedAttempts += 1
                report(failure, delay: delay, lastReported: &lastReportedFailure)
            }
            connectedAt = nil
            if waitBeforeReconnecting(delay) {
                break
            }
            startConnecting { mosquitto_reconnect_async(handle.pointer) }
        }
        let waiters = state.withLock { state in
            state.lifecycle = .stopped
            state.link = .down
            defer { state.networkThreadWaiters = [] }
            return state.networkThreadWaiters
        }
        finishEvents(discarding: state.withLock { $0.outgoing.count })
        for waiter in waiters {
            waiter.resume()
        }
    }

    /// Runs a connect call; a failure is recorded for the next round of the loop (which then returns
    /// at once, as there is no socket).
    private func startConnecting(_ connectCall: () -> Int32) {
        let result = connectCall()
        let savedErrno = errno
        // disconnect() may have run during the call; its mosquitto_disconnect then found no socket,
        // so send the DISCONNECT on the new one.
        if state.withLock({ $0.lifecycle == .stopping }) {
            mosquitto_disconnect(handle.pointer)
        }
        if result != MOSQ_ERR_SUCCESS.rawValue {
            let error = MQTTError(mosquittoCode: result, errno: savedErrno, during: .connect, broker: configuration.brokerAddress)
            state.withLock { $0.connectionFailure = error }
        }
    }

    /// One round of the network thread. It does what `mosquitto_loop` does (wait, `mosquitto_loop_read`,
    /// `mosquitto_loop_write`, `mosquitto_loop_misc`, and the same result), differently in two ways:
    /// - it waits in poll(2) on the socket and on ``networkWake``, which a burst of publishes signals
    ///   once. `mosquitto_loop` waits on a socket pair that libmosquitto writes a byte to for every
    ///   queued packet and reads one byte from per round: under load a round per packet. (Those
    ///   bytes are still written; unread, the pair fills and later writes fail at once.)
    /// - it writes what is queued with the socket corked (`TCP_CORK`), and uncorks once all is
    ///   handed to the kernel, which sends it at once (`TCP_NODELAY` is set): the document, event
    ///   and state of one change leave in one segment instead of one each, which spares this
    ///   thread and the broker a pass through the network stack per packet.
    ///
    /// A TLS connection keeps `mosquitto_loop`: packets that OpenSSL has already decrypted are
    /// invisible to poll(2), and `mosquitto_loop_read` goes on to them only until an `EAGAIN` in
    /// `errno`, which the full socket pair leaves behind whenever a packet read queues an answer.
    /// `mosquitto_loop` reads the pair, so its select(2) returns at once until they are handled.
    private func serviceConnection(timeoutMilliseconds: Int32) -> Int32 {
        if configuration.tls != nil {
            return mosquitto_loop(handle.pointer, timeoutMilliseconds, 1)
        }
        let socket = mosquitto_socket(handle.pointer)
        guard socket >= 0 else { return MOSQ_ERR_NO_CONN.rawValue }
        var descriptors = [
            pollfd(fd: socket, events: Int16(POLLIN) | (mosquitto_want_write(handle.pointer) ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: networkWake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds) >= 0 else {
            return errno == EINTR ? MOSQ_ERR_SUCCESS.rawValue : MOSQ_ERR_ERRNO.rawValue
        }
        let ready = descriptors[0].revents
        guard ready & Int16(POLLNVAL) == 0 else {
            // Where mosquitto_loop's select(2) fails, rather than poll(2) returning at once forever.
            errno = EBADF
            return MOSQ_ERR_ERRNO.rawValue
        }
        if ready & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
            let result = readAvailable(socket)
            if result != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(handle.pointer) < 0 {
                return result
            }
        }
        let woken = descriptors[1].revents != 0
        if woken {
            networkWake.clear()
        }
        // Reading may have queued acknowledgements; a wake-up means packets were queued.
        if woken || ready & Int16(POLLOUT) != 0 || mosquitto_want_write(handle.pointer) {
            let result = writeQueued(socket)
            if result != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(handle.pointer) < 0 {
                return result
            }
        }
        return mosquitto_loop_misc(handle.pointer)
    }

    /// `mosquitto_loop_read` until the socket has nothing more to read (a zero-timeout poll), at
    /// most 64 times so that writing is not held up. One call stops after the first packet whose
    /// handling queues an answer (a PUBACK): queueing leaves `EAGAIN` from the full socket pair in
    /// `errno`, where `mosquitto_loop_read` looks for the socket's own.
    private func readAvailable(_ socket: Int32) -> Int32 {
        for _ in 0..<64 {
            let result = mosquitto_loop_read(handle.pointer, 1)
            guard result == MOSQ_ERR_SUCCESS.rawValue, mosquitto_socket(handle.pointer) == socket else { return result }
            var pending = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, 0) == 1, pending.revents & Int16(POLLIN) != 0 else { break }
        }
        return MOSQ_ERR_SUCCESS.rawValue
    }

    /// `mosquitto_loop_write` with `TCP_CORK` set on `socket` (setsockopt), then cleared, which
    /// sends what was written. A failed setsockopt only costs the coalescing. A write error or a
    /// sent DISCONNECT closes the socket inside the call (which flushes it); its number may belong
    /// to another file by then, so the cork is only cleared on a socket still libmosquitto's.
    private func writeQueued(_ socket: Int32) -> Int32 {
        var on: Int32 = 1, off: Int32 = 0
        let size = socklen_t(MemoryLayout<Int32>.size)
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &on, size)
        let result = mosquitto_loop_write(handle.pointer, 1)
        if mosquitto_socket(handle.pointer) == socket {
            _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &off, size)
        }
        return result
    }

    /// After a CONNACK was accepted: sends every subscription again, flushes the buffer in publish
    /// order and marks the link up; `.connected` follows once the broker has acknowledged the
    /// subscriptions (at once without any), so a consumer can rely on them. It runs after the round
    /// that read the CONNACK, because libmosquitto re-sends its own unacknowledged QoS 1/2 messages
    /// only after the connect callback: flushing inside the callback would let those older messages
    /// overwrite newer retained state. Returns whether a connection was set up.
    private func completeConnectionSetup() -> Bool {
        typealias Setup = (sessionPresent: Bool, flushed: Int, dropped: Int, deliverConnectedNow: Bool, failures: [MQTTError])
        let setup = state.withLock { state -> Setup? in
            guard case .awaitingSetup(let sessionPresent) = state.link else { return nil }
            var failures: [MQTTError] = []
            var resubscriptions: Set<Int32> = []
            for subscription in state.subscriptions {
                do throws(MQTTError) {
                    if let messageID = try sendSubscription(subscription, state: &state) {
                        resubscriptions.insert(messageID)
                    }
                } catch {
                    failures.append(error)
                }
            }
            let (messages, dropped) = state.outgoing.drain()
            for message in messages {
                do throws(MQTTError) {
                    if try handOver(message, state: &state) == .notConnected {
                        state.outgoing.append(message)
                    }
                } catch {
                    failures.append(error)
                }
            }
            state.link = .up
            state.connectedEventAwaitingSubscriptions = resubscriptions.isEmpty ? nil : (sessionPresent, resubscriptions)
            return (sessionPresent, messages.count, dropped, resubscriptions.isEmpty, failures)
        }
        guard let setup else { return false }
        // Logged outside the lock: a log handler may itself publish through this client.
        for failure in setup.failures {
            logger.error("MQTT connection setup could not send a subscription or a buffered message", metadata: ["error": "\(failure.message)"])
        }
        if setup.dropped > 0 {
            logger.warning("MQTT messages dropped while disconnected", metadata: [
                "mqtt.dropped": "\(setup.dropped)",
                "mqtt.buffer_limit": "\(configuration.outgoingBufferLimit)",
            ])
        }
        logger.info("MQTT connected", metadata: [
            "mqtt.protocol": "\(protocolVersion)",
            "mqtt.session_present": "\(setup.sessionPresent)",
            "mqtt.flushed": "\(setup.flushed)",
        ])
        if setup.deliverConnectedNow {
            eventSink.yield(.connected(sessionPresent: setup.sessionPresent))
        }
        return true
    }

    /// Switches to MQTT 3.1.1 (`mosquitto_int_option(MOSQ_OPT_PROTOCOL_VERSION)`) when MQTT 5 was refused.
    /// Safe from the network thread: the link is down, so publish and subscribe do not call into
    /// libmosquitto meanwhile.
    private func fallBackToMQTT311() -> Bool {
        let switched = state.withLock { state in
            guard state.protocolVersion == .v5 else { return false }
            state.protocolVersion = .v311
            return true
        }
        guard switched else { return false }
        mosquitto_int_option(handle.pointer, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        logger.notice("MQTT broker refused MQTT 5; falling back to MQTT 3.1.1")
        return true
    }

    /// How long a connection must last for its loss to restart the backoff from the shortest wait.
    static let stableConnection: Duration = .seconds(10)
    /// How many short-lived connections in a row make the client warn about them.
    static let shortConnectionsBeforeWarning = 3

    private func warnAboutShortConnections() {
        logger.warning("MQTT connections keep ending soon after they start", metadata: [
            "mqtt.broker": "\(configuration.brokerAddress)", "mqtt.client_id": "\(configuration.clientID)",
            "hint": "another client may be connecting with the same client id, each taking the session from the other; give each one its own id (for alarmd: its own node.id). Reconnecting with a growing wait",
        ])
    }

    private func reconnectDelay(afterFailedAttempts attempts: Int, atMost cap: Duration) -> Duration {
        min(configuration.reconnectDelay * (1 << min(attempts, 16)), cap)
    }

    /// Logs a failed attempt when its reason changed (as an error when a setting must be fixed, as a
    /// warning when waiting may cure it), and at debug level while it repeats.
    private func report(_ failure: MQTTError, delay: Duration, lastReported: inout String?) {
        let metadata: Logger.Metadata = ["error": "\(failure.message)", "mqtt.retry_in": "\(delay)"]
        if failure.message == lastReported {
            logger.debug("MQTT connection attempt failed", metadata: metadata)
        } else {
            let level: Logger.Level = failure.isWorthRetrying ? .warning : .error
            logger.log(level: level, "MQTT connection attempt failed", metadata: metadata)
            lastReported = failure.message
        }
    }

    /// Waits `delay` unless ``disconnect()`` interrupts; returns whether the client is stopping.
    private func waitBeforeReconnecting(_ delay: Duration) -> Bool {
        if delay > .zero {
            _ = reconnectWaitInterrupt.wait(timeout: .now() + .nanoseconds(Int(delay.inNanoseconds)))
        }
        return state.withLock { $0.lifecycle == .stopping }
    }

    private func waitForNetworkThread() async {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state in
                guard state.lifecycle != .stopped else { return true }
                state.networkThreadWaiters.append(continuation)
                return false
            }
            if finished {
                continuation.resume()
            }
        }
    }

    /// Returns when every QoS 1/2 publish handed to libmosquitto is acknowledged, the link drops, or
    /// the grace period ends, whichever comes first.
    private func waitForAcknowledgements() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.acknowledgementsSettled() }
            group.addTask { try? await Task.sleep(for: self.configuration.disconnectGracePeriod) }
            await group.next()
            group.cancelAll()
        }
    }

    private func acknowledgementsSettled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let settled = state.withLock { state in
                    guard state.link == .up, !state.unacknowledgedPublishes.isEmpty, !Task.isCancelled else { return true }
                    state.acknowledgementWaiter = continuation
                    return false
                }
                if settled {
                    continuation.resume()
                }
            }
        } onCancel: {
            state.withLock { $0.acknowledgementWaiter.take() }?.resume()
        }
    }

    private func finishEvents(discarding unsentCount: Int) {
        if unsentCount > 0 {
            logger.warning("unsent MQTT messages discarded at disconnect", metadata: ["mqtt.discarded": "\(unsentCount)"])
        }
        eventSink.finish()
    }
}

// MARK: - Callbacks (run on the network thread)

extension MQTTClient {
    private static func client(from userData: UnsafeMutableRawPointer?) -> MQTTClient {
        // Set in installCallbacks(); callbacks only run while the network thread, which holds a
        // strong reference, is alive.
        Unmanaged<MQTTClient>.fromOpaque(userData!).takeUnretainedValue()
    }

    /// Registers the callbacks (`mosquitto_connect_v5_callback_set` and friends) with `self` as user
    /// data (`mosquitto_user_data_set`). Closures are capture-free so they convert to C function pointers.
    private func installCallbacks() {
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
        if result == MOSQ_ERR_SUCCESS.rawValue {
            state.withLock { $0.link = .awaitingSetup(sessionPresent: flags & 1 != 0) }
        } else {
            let refusal = MQTTError(mosquittoCode: result, during: .connack, broker: configuration.brokerAddress)
            state.withLock { $0.connectionFailure = refusal }
        }
    }

    private func connectionEnded(result: Int32, errno savedErrno: Int32) {
        let reason = MQTTError(mosquittoCode: result, errno: savedErrno, during: .connectionEnded, broker: configuration.brokerAddress)
        let (wasUp, acknowledgementWaiter) = state.withLock { state in
            let wasUp = state.link == .up
            state.link = .down
            state.subscriptionsAwaitingAcknowledgement = [:]
            state.connectedEventAwaitingSubscriptions = nil
            // A refusal recorded by the connect callback explains more than the error that follows it.
            if state.connectionFailure == nil {
                state.connectionFailure = reason
            }
            return (wasUp, state.acknowledgementWaiter.take())
        }
        acknowledgementWaiter?.resume()
        guard wasUp else { return }
        if result == MOSQ_ERR_SUCCESS.rawValue {
            logger.info("MQTT disconnected")
        } else {
            logger.warning("MQTT connection lost", metadata: ["error": "\(reason.message)"])
        }
        eventSink.yield(.disconnected(reason: reason.message))
    }

    /// Copies everything out of libmosquitto's message, which is freed when the callback returns.
    private func messageArrived(_ message: mosquitto_message, properties: OpaquePointer?) {
        let payload = message.payloadlen > 0
            ? Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen)))
            : []
        var responseTopic: String?
        var correlationData: [UInt8]?
        if let properties {
            var topicValue: UnsafeMutablePointer<CChar>?
            if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &topicValue, false) != nil, let topicValue {
                responseTopic = String(cString: topicValue)
                free(topicValue)
            }
            var dataValue: UnsafeMutableRawPointer?
            var dataLength: UInt16 = 0
            if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &dataValue, &dataLength, false) != nil {
                correlationData = dataValue.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(dataLength))) } ?? []
                free(dataValue)
            }
        }
        eventSink.yield(.message(MQTTMessage(
            topic: String(cString: message.topic),
            payload: payload,
            qos: Int(message.qos),
            retain: message.retain,
            responseTopic: responseTopic,
            correlationData: correlationData
        )))
    }

    private func publishAcknowledged(messageID: Int32, reasonCode: Int32) {
        if reasonCode >= 128 {
            logger.warning("MQTT broker rejected a publish", metadata: ["mqtt.reason": "\(String(cString: mosquitto_reason_string(reasonCode)))"])
        }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.unacknowledgedPublishes.remove(messageID)
            return state.unacknowledgedPublishes.isEmpty ? state.acknowledgementWaiter.take() : nil
        }
        waiter?.resume()
    }

    private func subscriptionAcknowledged(messageID: Int32, grantedQoS: [Int32]) {
        let (filter, connectedSessionPresent) = state.withLock { state -> (String?, Bool?) in
            let filter = state.subscriptionsAwaitingAcknowledgement.removeValue(forKey: messageID)
            guard var awaiting = state.connectedEventAwaitingSubscriptions else { return (filter, nil) }
            awaiting.messageIDs.remove(messageID)
            state.connectedEventAwaitingSubscriptions = awaiting.messageIDs.isEmpty ? nil : awaiting
            return (filter, awaiting.messageIDs.isEmpty ? awaiting.sessionPresent : nil)
        }
        for granted in grantedQoS where granted >= 128 {
            logger.error("MQTT broker refused a subscription", metadata: [
                "mqtt.filter": "\(filter ?? "?")",
                "mqtt.reason": "\(String(cString: mosquitto_reason_string(granted)))",
            ])
        }
        if let connectedSessionPresent {
            eventSink.yield(.connected(sessionPresent: connectedSessionPresent))
        }
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

// MARK: - The libmosquitto handle

/// The `struct mosquitto *` of one client.
///
/// `@unchecked Sendable` because the pointer is shared between the caller's threads and the network
/// thread under these rules: `mosquitto_publish_v5`, `mosquitto_subscribe` and `mosquitto_disconnect`
/// are made thread-safe by libmosquitto itself (`mosquitto_threaded_set(true)` makes it take its
/// mutexes and leave socket writes to the network thread); `mosquitto_loop`, `mosquitto_loop_read`,
/// `mosquitto_loop_write`, `mosquitto_loop_misc`, `mosquitto_reconnect_async`
/// and the protocol fallback run only on the network thread; configuration happens in `init` before
/// the pointer is shared; `mosquitto_destroy` runs in `MQTTClient.deinit`, when no thread uses it.
private struct MosquittoHandle: @unchecked Sendable {
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
        func invalid(_ message: String) -> MQTTError {
            MQTTError(code: .invalidConfiguration, message: message)
        }
        guard !configuration.host.isEmpty else {
            throw invalid("the MQTT broker host is empty: set a host name or address")
        }
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
            let files = [("tls.caFile", tls.caFile), ("tls.caPath", tls.caPath), ("tls.certFile", tls.certFile), ("tls.keyFile", tls.keyFile)]
            for case let (setting, path?) in files where access(path, R_OK) != 0 {
                throw invalid("\(setting) '\(path)' is not readable (\(String(cString: strerror(errno)))): check the path and its permissions")
            }
            guard (tls.certFile == nil) == (tls.keyFile == nil) else {
                throw invalid("tls.certFile and tls.keyFile go together: set both or neither")
            }
            guard tls.certFile == nil || tls.caFile != nil || tls.caPath != nil else {
                throw invalid("a TLS client certificate needs tls.caFile or tls.caPath as well")
            }
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
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
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
            if tls.caFile == nil, tls.caPath == nil {
                try check(mosquitto_int_option(pointer, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "tls (system certificate authorities)")
            } else {
                try check(mosquitto_tls_set(pointer, tls.caFile, tls.caPath, tls.certFile, tls.keyFile, nil), "tls")
            }
            try check(mosquitto_tls_insecure_set(pointer, tls.insecure), "tls.insecure")
        }
    }
}

extension MQTTError {
    /// Whether waiting can cure this failure (broker down, network, refusal by a broker that may be
    /// reconfigured), as opposed to a setting that must be fixed first.
    var isWorthRetrying: Bool {
        code == .connectionFailed || code == .connectionRefused
    }
}
