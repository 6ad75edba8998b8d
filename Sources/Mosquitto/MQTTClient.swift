import CMosquitto
import Dispatch
import LinuxSystem
import Logging
import Synchronization

/// An MQTT client over libmosquitto that keeps itself connected.
///
/// A network thread of its own drives libmosquitto around its own poll(2), sleeping until the next
/// keepalive ping is due (``KeepaliveSchedule``); callbacks run on it and yield into ``events``.
/// ``MQTTConnectionStateMachine``, guarded by a lock, decides what happens; this class carries out
/// its answers (libmosquitto calls, events, logs) after releasing the lock. Publishes made while
/// disconnected wait in a bounded buffer, flushed with every subscription after each connection.
///
/// Why not `mosquitto_loop_start`: its thread runs `mosquitto_loop_forever`, which returns for good on
/// any "fatal" result — a DNS failure, and every refused MQTT 5 CONNACK, including the one that asks
/// for a protocol fallback — leaving the client silently offline. This client's own loop retries
/// those with a capped backoff instead.
public final class MQTTClient: Sendable {
    /// Connection changes and received messages, in the order they happened. Consume it from one task.
    /// It is unbounded (nothing is dropped) and finishes after ``disconnect()``.
    public let events: AsyncStream<MQTTEvent>

    let eventSink: AsyncStream<MQTTEvent>.Continuation
    let configuration: MQTTConfiguration
    let logger: Logger
    let handle: MosquittoHandle
    /// The state machine and the continuations that wait on it. Held only for a transition, never
    /// across a libmosquitto call or a log.
    let state: Mutex<GuardedState>
    /// Held around each libmosquitto send call (`mosquitto_publish_v5`, `mosquitto_subscribe`)
    /// together with the transitions that decide it and record its message id, and by the PUBACK
    /// and SUBACK callbacks. So a publish racing with the flush of the buffer after a reconnection
    /// cannot overtake the buffered messages, and an acknowledgement never arrives before its
    /// message id is recorded. Lock order: this one, then ``state``. It cannot deadlock with
    /// libmosquitto's own mutexes: the send calls take only its message and packet mutexes, never
    /// the callback mutex that the network thread holds while it runs callbacks.
    let sendLock = Mutex(())
    /// How long ``disconnect()`` waits for the broker to acknowledge QoS 1 and 2 publishes (such as
    /// a final offline status) before it sends DISCONNECT.
    static let disconnectGracePeriod: Duration = .seconds(2)
    /// Signalled by ``disconnect()`` to cut short the network thread's wait between reconnect attempts.
    let reconnectWaitInterrupt = DispatchSemaphore(value: 0)
    /// Wakes the network thread from poll(2) when a packet was queued from another thread.
    let networkWake: EventSignal

    struct GuardedState {
        var machine: MQTTConnectionStateMachine
        /// ``disconnect()`` waiting for PUBACKs; resumed when none is outstanding or the link drops.
        var acknowledgementWaiter: CheckedContinuation<Void, Never>?
        /// ``disconnect()`` calls waiting for the network thread to end.
        var networkThreadWaiters: [CheckedContinuation<Void, Never>] = []
        /// Set by ``disconnect()`` for the network thread, which sends the DISCONNECT.
        var disconnectDue = false
    }

    /// `mosquitto_lib_init`, needed once per process before any other call: a static `let` is
    /// initialised exactly once, thread-safely, on first use.
    static let libraryInitialization: Int32 = mosquitto_lib_init()

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
        self.state = Mutex(GuardedState(machine: MQTTConnectionStateMachine(configuration: configuration)))
        (events, eventSink) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .unbounded)
        installCallbacks()
    }

    deinit {
        // Only reached once the network thread has ended (it holds a strong reference), so no
        // callback can run any more; the log callback is cleared first because it can fire on any thread.
        mosquitto_log_callback_set(handle.pointer, nil)
        mosquitto_destroy(handle.pointer)
    }

    /// Whether a connection is up and set up (subscriptions sent, buffer flushed), so that publishes
    /// go straight to the broker. ``MQTTEvent/connected(sessionPresent:)`` also waits for the SUBACKs.
    public var isConnected: Bool { state.withLock { $0.machine.isConnected } }

    /// Why the last attempt to connect failed, or the last connection ended (as the log says it);
    /// nil before the first failure. What to tell a user while ``isConnected`` is false.
    public var connectionProblem: String? { state.withLock { $0.machine.lastReportedFailure } }

    /// The protocol version in use, or tried next: MQTT 5 until a fallback to 3.1.1 under
    /// ``MQTTProtocolSetting/auto``, or the version ``MQTTConfiguration/protocolSetting`` pins.
    public var protocolVersion: MQTTProtocolVersion { state.withLock { $0.machine.protocolVersion } }

    /// Starts the network thread and returns at once. The thread connects (`mosquitto_connect_async`,
    /// whose host lookup and TLS setup block) and keeps reconnecting (`mosquitto_reconnect_async`).
    ///
    /// Connection failures are not thrown but logged (as a warning when waiting may cure them, else
    /// as an error) and retried. Watch ``events`` for ``MQTTEvent/connected(sessionPresent:)``.
    ///
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/alreadyConnected`` or ``MQTTError/Code/clientClosed``
    ///   when the client was already started or disconnected, or ``MQTTError/Code/outOfMemory`` when
    ///   its thread cannot be started (`pthread_create`).
    public func connect() throws(MQTTError) {
        try state.withLock { state throws(MQTTError) in try state.machine.connectRequested() }
        do {
            // A thread of its own: it blocks in poll(2) and in libmosquitto's connect calls.
            try startDedicatedThread(named: "mqtt-network") { [self] in runNetworkLoop() }
        } catch {
            if let discarding = state.withLock({ $0.machine.networkThreadFailedToStart() }) {
                finishEvents(discarding: discarding)
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
        try MosquittoHandle.validate(filter: filter, qos: qos, broker: configuration.brokerAddress)
        let subscription = MQTTConnectionStateMachine.Subscription(filter: filter, qos: qos, noLocal: noLocal)
        let sent = try sendLock.withLock { _ throws(MQTTError) -> Bool in
            let toSend = try state.withLock { state throws(MQTTError) in try state.machine.subscribeRequested(subscription) }
            guard let toSend else { return false }
            return try send(toSend) != nil
        }
        if sent { networkWake.signal() }
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
        if try sendLock.withLock({ _ throws(MQTTError) in try enqueue(message) }) { networkWake.signal() }
    }

    /// Takes back the messages published while disconnected that `isWithdrawn` picks, if they
    /// still wait for a connection: they will not be sent (a request whose requester stopped
    /// waiting for its reply). Retained messages, and messages handed to libmosquitto, stay.
    public func withdrawUnsent(where isWithdrawn: (MQTTMessage) -> Bool) {
        state.withLock { $0.machine.publishWithdrawn(where: isWithdrawn) }
    }

    /// Publishes `messages` in order, each as ``publish(_:)`` does, and wakes the network thread
    /// once for all of them, so that they leave together: in one TCP segment when they fit.
    ///
    /// - Returns: the messages that could not be published, each with the error ``publish(_:)``
    ///   would have thrown for it, in order; all the others were published.
    public func publish(_ messages: [MQTTMessage]) -> [(message: MQTTMessage, error: MQTTError)] {
        var failures: [(message: MQTTMessage, error: MQTTError)] = []
        let handedOver = sendLock.withLock { _ in
            var handedOver = false
            for message in messages {
                do throws(MQTTError) {
                    if try enqueue(message) { handedOver = true }
                } catch { failures.append((message, error)) }
            }
            return handedOver
        }
        if handedOver { networkWake.signal() }
        return failures
    }

    /// Under the send lock: checks `message`, then hands it to libmosquitto, or keeps it in the
    /// buffer while there is no connection. Returns whether libmosquitto took it (the network
    /// thread must then be woken to send it).
    private func enqueue(_ message: MQTTMessage) throws(MQTTError) -> Bool {
        try MosquittoHandle.validate(message)
        let action = try state.withLock { state throws(MQTTError) in try state.machine.publishRequested(message) }
        guard case .handOver(let protocolVersion) = action else { return false }
        return try handOver(message, protocolVersion: protocolVersion)
    }

    /// Under the send lock: `mosquitto_publish_v5`, its outcome recorded before a PUBACK can come.
    /// Returns whether libmosquitto took the message.
    func handOver(_ message: MQTTMessage, protocolVersion: MQTTProtocolVersion) throws(MQTTError) -> Bool {
        let outcome = try handle.publish(message, protocolVersion: protocolVersion, broker: configuration.brokerAddress)
        state.withLock { $0.machine.publishHandedOver(message, outcome: outcome) }
        return outcome != .notConnected
    }

    /// Under the send lock: `mosquitto_subscribe(_v5)`, its message id recorded before the SUBACK
    /// can come. Returns that id, or nil without a connection.
    func send(_ subscription: MQTTConnectionStateMachine.Subscription) throws(MQTTError) -> Int32? {
        guard let messageID = try handle.subscribe(subscription, broker: configuration.brokerAddress) else { return nil }
        state.withLock { $0.machine.subscriptionSent(filter: subscription.filter, messageID: messageID) }
        return messageID
    }

    /// Whether `topic` matches the subscription filter `filter` (with `+` and `#` wildcards).
    /// Calls `mosquitto_topic_matches_sub`; a malformed filter or topic matches nothing.
    public static func topic(_ topic: String, matches filter: String) -> Bool {
        var matches = false
        return mosquitto_topic_matches_sub(filter, topic, &matches) == MOSQ_ERR_SUCCESS.rawValue && matches
    }

    /// Ends the connection cleanly and stops the client for good.
    ///
    /// Waits up to 2 s (``disconnectGracePeriod``) for the broker to acknowledge QoS 1 and 2 publishes
    /// already handed over (such as your own offline status), then sends DISCONNECT
    /// (`mosquitto_disconnect`) and waits for the network thread to end. A clean DISCONNECT means the
    /// broker does NOT publish the will: publish your offline status yourself before calling this.
    /// Messages still buffered are discarded (and counted in the log). ``events`` finishes.
    public func disconnect() async {
        switch state.withLock({ $0.machine.disconnectRequested() }) {
        case .none: return
        case .finishEvents(let discarding): finishEvents(discarding: discarding)
        case .stopNetworkThread:
            await waitForAcknowledgements()
            // mosquitto_disconnect reads, unlocked, the socket that the network thread's (re)connect
            // and loop calls set (ThreadSanitizer saw it), so that thread sends it; but with TLS it
            // waits in mosquitto_loop, which only a packet queued through libmosquitto wakes.
            if configuration.tls != nil { mosquitto_disconnect(handle.pointer) } else { state.withLock { $0.disconnectDue = true } }
            networkWake.signal()
            reconnectWaitInterrupt.signal()
            await waitForNetworkThread()
        case .awaitNetworkThread: await waitForNetworkThread()
        }
    }

    /// Finishes ``events`` and resumes the disconnect() calls waiting for the network thread.
    func finishEvents(discarding unsentCount: Int) {
        if unsentCount > 0 {
            logger.warning("unsent MQTT messages discarded at disconnect", metadata: ["mqtt.discarded": "\(unsentCount)"])
        }
        eventSink.finish()
        let waiters = state.withLock { state in
            defer { state.networkThreadWaiters = [] }
            return state.networkThreadWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitForNetworkThread() async {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state in
                guard state.machine.lifecycle != .stopped else { return true }
                state.networkThreadWaiters.append(continuation)
                return false
            }
            if finished { continuation.resume() }
        }
    }

    /// Returns when every QoS 1/2 publish handed to libmosquitto is acknowledged, the link drops, or
    /// ``disconnectGracePeriod`` ends, whichever comes first; whoever comes first takes the waiter.
    private func waitForAcknowledgements() async {
        await withCheckedContinuation { continuation in
            let waiting = state.withLock { state in
                guard state.machine.isAwaitingAcknowledgements else { return false }
                state.acknowledgementWaiter = continuation
                return true
            }
            guard waiting else { return continuation.resume() }
            Task { [weak self] in
                try? await Task.sleep(for: Self.disconnectGracePeriod)
                self?.state.withLock { $0.acknowledgementWaiter.take() }?.resume()
            }
        }
    }
}
