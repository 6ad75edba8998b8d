import CMosquitto

/// The connection logic of ``MQTTClient`` as a value: every input (a call of the public API, a
/// libmosquitto callback, the end of a round of the network thread) is a mutating method that
/// changes the state and returns what to do, which the client carries out after releasing the
/// lock that guards this value. It calls nothing and reads no clock (times come in as arguments),
/// so every transition can be tested without a broker and without waiting.
///
/// What it decides:
/// - the life of the client: idle → running (network thread) → stopping → stopped;
/// - the link: down → CONNACK accepted, awaiting setup → up (subscriptions sent again, buffer
///   flushed), and the `.connected` event once the broker has acknowledged those subscriptions;
/// - where a publish goes: to libmosquitto while up, else into the bounded ``OutgoingBuffer``;
/// - what follows a failed round: stop, fall back to MQTT 3.1.1, or wait (a capped exponential
///   backoff, with its own cap after connections that ended soon after they started);
/// - which MQTT version the next attempt speaks (``protocolVersion``), under ``MQTTProtocolSetting/auto``;
/// - which QoS 1 and 2 publishes are unacknowledged, for ``MQTTClient/disconnect()``.
struct MQTTConnectionStateMachine {
    struct Subscription: Equatable {
        let filter: String
        let qos: Int
        let noLocal: Bool
    }

    enum Lifecycle: Equatable { case idle, running, stopping, stopped }

    enum Link: Equatable {
        /// No connection, or connecting.
        case down
        /// CONNACK accepted; subscriptions and the buffer are sent after the current round of the network thread.
        case awaitingSetup(sessionPresent: Bool)
        case up
    }

    /// How long a connection must last for its loss to restart the backoff from the shortest wait.
    static let stableConnection: Duration = .seconds(10)
    /// How many short-lived connections in a row make the client warn about them.
    static let shortConnectionsBeforeWarning = 3

    /// The reconnect waits, the protocol setting, the birth topic and the broker's address.
    private let configuration: MQTTConfiguration
    private(set) var lifecycle: Lifecycle = .idle
    private(set) var link: Link = .down
    /// The version the next connection attempt speaks, and the current connection speaks.
    private(set) var protocolVersion: MQTTProtocolVersion
    /// A broker accepted a connection in ``protocolVersion``: it is kept for every reconnect.
    private(set) var protocolConfirmed = false
    /// The fallback to 3.1.1 came from a dropped MQTT 5 CONNECT, which may also have been a broker
    /// going down at that moment: while unconfirmed, 3.1.1 dropped too sends it back to MQTT 5.
    private var fellBackAfterDrop = false
    /// A fallback happened before (only possible until a broker accepts a connection).
    private var fellBackBefore = false
    /// A CONNACK came in the current attempt (accepting or refusing).
    private var acknowledgedInAttempt = false
    private(set) var subscriptions: [Subscription] = []
    /// SUBSCRIBE message ids waiting for their SUBACK, to name the filter if the broker refuses it.
    private var subscriptionsAwaitingAcknowledgement: [Int32: String] = [:]
    /// Set between a connection setup and the SUBACKs of its resubscriptions: `.connected` is
    /// delivered once the broker has acknowledged them all.
    private var connectedEventAwaitingSubscriptions: (sessionPresent: Bool, messageIDs: Set<Int32>)?
    private(set) var outgoing: OutgoingBuffer
    /// The latest retained message published on `birthTopic`: the first message of every connection.
    private(set) var birth: MQTTMessage?
    /// The topics of QoS 1 and 2 publishes handed to libmosquitto and not acknowledged yet, by message id.
    private(set) var unacknowledgedPublishes: [Int32: String] = [:]
    /// Why the current connection attempt failed, as the callbacks saw it (a CONNACK refusal
    /// explains more than the error of the round that follows it).
    private var connectionFailure: MQTTError?
    /// Failed attempts since the last stable connection: the exponent of the backoff.
    private(set) var failedAttempts = 0
    /// Connections in a row that ended within ``stableConnection``: the attempts that failed before one do not count.
    private var shortConnections = 0
    /// When the current connection was set up; nil while there is none.
    private var connectedAt: ContinuousClock.Instant?
    /// The message of the last failed attempt or lost connection; nil before the first.
    private(set) var lastReportedFailure: String?

    init(configuration: MQTTConfiguration) {
        self.configuration = configuration
        protocolVersion = configuration.protocolSetting.firstVersion
        outgoing = OutgoingBuffer(limit: configuration.outgoingBufferLimit)
    }

    var isConnected: Bool { link == .up }
    var isClosing: Bool { lifecycle == .stopping || lifecycle == .stopped }
    /// Whether ``MQTTClient/disconnect()`` should wait for PUBACKs before sending DISCONNECT.
    var isAwaitingAcknowledgements: Bool { link == .up && !unacknowledgedPublishes.isEmpty }

    var closedError: MQTTError {
        MQTTError(code: .clientClosed, message: "the MQTT client for \(configuration.brokerAddress) was disconnected: create a new client to connect again")
    }

    // MARK: - Lifecycle

    /// ``MQTTClient/connect()``: the caller starts the network thread unless this throws.
    mutating func connectRequested() throws(MQTTError) {
        switch lifecycle {
        case .idle: lifecycle = .running
        case .running:
            throw MQTTError(code: .alreadyConnected, message: "connect() was called twice on the client for \(configuration.brokerAddress): call it once; the client reconnects by itself")
        case .stopping, .stopped: throw closedError
        }
    }

    /// The network thread could not start. Returns nil when connect() may be called again; else a
    /// disconnect() came meanwhile and waits for a thread that never started: finish the events,
    /// discarding the returned number of buffered messages.
    mutating func networkThreadFailedToStart() -> Int? {
        let stopping = lifecycle == .stopping
        lifecycle = stopping ? .stopped : .idle
        return stopping ? outgoing.count : nil
    }

    enum DisconnectAction: Equatable {
        case none
        /// Never started: nothing runs, so only the events are finished.
        case finishEvents(discarding: Int)
        /// Wait for PUBACKs (``isAwaitingAcknowledgements``), send DISCONNECT, wake the network
        /// thread and wait for it to end.
        case stopNetworkThread
        /// Another disconnect() is stopping it: wait for the network thread to end.
        case awaitNetworkThread
    }

    mutating func disconnectRequested() -> DisconnectAction {
        switch lifecycle {
        case .idle:
            lifecycle = .stopped
            return .finishEvents(discarding: outgoing.count)
        case .running:
            lifecycle = .stopping
            return .stopNetworkThread
        case .stopping: return .awaitNetworkThread
        case .stopped: return .none
        }
    }

    /// The network thread is about to return; returns how many buffered messages are discarded.
    mutating func networkThreadEnded() -> Int {
        lifecycle = .stopped
        link = .down
        return outgoing.count
    }

    // MARK: - Publish and subscribe

    enum PublishAction: Equatable {
        /// Kept in the buffer until the next connection.
        case buffered
        /// Call `mosquitto_publish_v5` (with properties on MQTT 5), then ``publishHandedOver(_:outcome:)``.
        case handOver(MQTTProtocolVersion)
    }

    mutating func publishRequested(_ message: MQTTMessage) throws(MQTTError) -> PublishAction {
        guard !isClosing else { throw closedError }
        let isBirth = message.retain && message.topic == configuration.birthTopic
        if isBirth { birth = message }
        guard link == .up else {
            // The birth message leaves first at the next connection, not from the buffer.
            if !isBirth { outgoing.append(message) }
            return .buffered
        }
        return .handOver(protocolVersion)
    }

    /// The publisher no longer wants the buffered messages `isWithdrawn` picks sent.
    mutating func publishWithdrawn(where isWithdrawn: (MQTTMessage) -> Bool) { outgoing.withdraw(where: isWithdrawn) }

    enum HandOverOutcome: Equatable {
        case accepted(messageID: Int32)
        /// libmosquitto has no socket (QoS 0 only: it keeps QoS 1 and 2 messages itself).
        case notConnected
    }

    mutating func publishHandedOver(_ message: MQTTMessage, outcome: HandOverOutcome) {
        switch outcome {
        case .accepted(let messageID): if message.qos > 0 { unacknowledgedPublishes[messageID] = message.topic }
        case .notConnected: outgoing.append(message)
        }
    }

    /// Remembers `subscription` for every later connection (replacing one with the same filter).
    /// Returns it to send now, as ``sendable(_:)`` makes it; nil while down or being set up (the
    /// connection setup sends every subscription).
    mutating func subscribeRequested(_ subscription: Subscription) throws(MQTTError) -> Subscription? {
        guard !isClosing else { throw closedError }
        if let index = subscriptions.firstIndex(where: { $0.filter == subscription.filter }) {
            subscriptions[index] = subscription
        } else {
            subscriptions.append(subscription)
        }
        return link == .up ? sendable(subscription) : nil
    }

    /// `subscription` as it goes out on the current connection: No Local only on MQTT 5. Send it
    /// with `mosquitto_subscribe` (`mosquitto_subscribe_v5` with No Local), then
    /// ``subscriptionSent(filter:messageID:)``.
    private func sendable(_ subscription: Subscription) -> Subscription {
        Subscription(filter: subscription.filter, qos: subscription.qos, noLocal: subscription.noLocal && protocolVersion == .v5)
    }

    mutating func subscriptionSent(filter: String, messageID: Int32) { subscriptionsAwaitingAcknowledgement[messageID] = filter }

    // MARK: - Callbacks

    /// The connect callback: the CONNACK accepted the connection, or refused it with `refusal`.
    mutating func connectionAcknowledged(sessionPresent: Bool, refusal: MQTTError?) {
        acknowledgedInAttempt = true
        if let refusal {
            connectionFailure = refusal
        } else {
            link = .awaitingSetup(sessionPresent: sessionPresent)
            protocolConfirmed = true
        }
    }

    /// The disconnect callback. Returns the event to deliver when a connection that was up ended.
    /// Any wait for acknowledgements ends too (they will not come on this connection).
    mutating func connectionEnded(reason: MQTTError) -> MQTTEvent? {
        let wasUp = link == .up
        link = .down
        subscriptionsAwaitingAcknowledgement = [:]
        connectedEventAwaitingSubscriptions = nil
        if connectionFailure == nil { connectionFailure = reason }
        return wasUp ? .disconnected(reason: reason.message) : nil
    }

    /// The publish callback (a PUBACK or PUBCOMP, or a QoS 0 message written): the publish's topic, to name
    /// it if refused, and whether none is left to acknowledge (which ends ``MQTTClient/disconnect()``'s wait).
    mutating func publishAcknowledged(messageID: Int32) -> (topic: String?, allAcknowledged: Bool) {
        (unacknowledgedPublishes.removeValue(forKey: messageID), unacknowledgedPublishes.isEmpty)
    }

    /// The subscribe callback. Returns the filter of that SUBSCRIBE (to name it if refused) and
    /// `.connected` once the last SUBACK of a connection setup has come.
    mutating func subscriptionAcknowledged(messageID: Int32) -> (filter: String?, deliver: MQTTEvent?) {
        let filter = subscriptionsAwaitingAcknowledgement.removeValue(forKey: messageID)
        connectedEventAwaitingSubscriptions?.messageIDs.remove(messageID)
        guard let awaiting = connectedEventAwaitingSubscriptions, awaiting.messageIDs.isEmpty else { return (filter, nil) }
        connectedEventAwaitingSubscriptions = nil
        return (filter, .connected(sessionPresent: awaiting.sessionPresent))
    }

    // MARK: - The network thread

    /// What the network thread sends after a CONNACK was accepted, outside the callback: libmosquitto
    /// re-sends its own unacknowledged QoS 1/2 messages only after the connect callback, so flushing
    /// inside it would let those older messages overwrite newer retained state.
    struct ConnectionSetup: Equatable {
        let sessionPresent: Bool
        /// Send each (as ``subscribeRequested(_:)`` returns them), in this order.
        let subscriptions: [Subscription]
        /// Hand over each, in this order (``PublishAction/handOver(_:)``): the birth message, then
        /// what was buffered, in publish order.
        let messages: [MQTTMessage]
        /// Non-retained messages the bounded buffer dropped while down.
        let droppedCount: Int
        let protocolVersion: MQTTProtocolVersion
    }

    /// After each round: returns the setup to carry out when a CONNACK was accepted, emptying the
    /// buffer. Report what was sent with ``publishHandedOver(_:outcome:)`` and
    /// ``subscriptionSent(filter:messageID:)``, then ``connectionSetUp(resubscriptions:at:)``.
    mutating func connectionSetupStarting() -> ConnectionSetup? {
        guard case .awaitingSetup(let sessionPresent) = link else { return nil }
        let (messages, dropped) = outgoing.drain()
        return ConnectionSetup(
            sessionPresent: sessionPresent,
            subscriptions: subscriptions.map(sendable),
            messages: (birth.map { [$0] } ?? []) + messages,
            droppedCount: dropped,
            protocolVersion: protocolVersion
        )
    }

    /// The link is up. Returns `.connected` to deliver now when no SUBACK is awaited (`resubscriptions`
    /// are the message ids of the SUBSCRIBEs sent by the setup); otherwise the last SUBACK delivers it.
    mutating func connectionSetUp(resubscriptions: Set<Int32>, at now: ContinuousClock.Instant) -> MQTTEvent? {
        guard case .awaitingSetup(let sessionPresent) = link else { return nil }
        link = .up
        connectedAt = now
        guard resubscriptions.isEmpty else {
            connectedEventAwaitingSubscriptions = (sessionPresent, resubscriptions)
            return nil
        }
        return .connected(sessionPresent: sessionPresent)
    }

    /// A call of `mosquitto_connect_async` or `mosquitto_reconnect_async` returned. Returns whether
    /// to call `mosquitto_disconnect` at once: a disconnect() during the call found no socket.
    mutating func connectCallReturned(failure: MQTTError?) -> Bool {
        if let failure { connectionFailure = failure }
        return lifecycle == .stopping
    }

    enum FailureReport {
        /// The disconnect callback has logged the loss. When `warnAboutShortConnections`, several
        /// connections in a row ended soon after they started.
        case connectionLost(warnAboutShortConnections: Bool)
        /// An attempt failed; `repeated` when it failed for the same reason as the one reported before.
        case attemptFailed(MQTTError, repeated: Bool)
    }

    enum FailedRoundAction {
        case stopNetworkThread
        /// The broker refused or dropped the MQTT 5 CONNECT: reconnect at once, in MQTT 3.1.1
        /// (``reconnectDelayElapsed()`` says so). `dropped`: it closed the connection without a CONNACK.
        /// `repeated`: not the first fallback, as at every attempt to a proxy whose broker is down.
        case fallBackToMQTT311(dropped: Bool, repeated: Bool)
        /// Wait, unless disconnect() interrupts, then ``reconnectDelayElapsed()``.
        case waitBeforeReconnect(Duration, report: FailureReport)
    }

    /// A round of the network thread returned `failure` (no socket, a lost connection, a refusal).
    mutating func connectionRoundFailed(_ failure: MQTTError, at now: ContinuousClock.Instant) -> FailedRoundAction {
        let recorded = connectionFailure.take()
        let acknowledged = acknowledgedInAttempt
        acknowledgedInAttempt = false
        guard lifecycle != .stopping else { return .stopNetworkThread }
        let failure = recorded ?? failure
        defer { connectedAt = nil }
        if configuration.protocolSetting == .auto, !protocolConfirmed {
            // The link is down, so publish and subscribe do not call into libmosquitto meanwhile.
            let refused = failure.mosquittoCode == Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue)
            // Dropped: the broker closed the connection (or sent what cannot be read, such as a 3.1.1
            // CONNACK to an MQTT 5 CONNECT), as opposed to one that was never made.
            let dropped = !acknowledged
                && [MOSQ_ERR_CONN_LOST, MOSQ_ERR_PROTOCOL, MOSQ_ERR_MALFORMED_PACKET].contains { failure.mosquittoCode == Int32($0.rawValue) }
            if protocolVersion == .v5, refused || dropped {
                protocolVersion = .v311
                fellBackAfterDrop = !refused
                defer { fellBackBefore = true }
                return .fallBackToMQTT311(dropped: !refused, repeated: fellBackBefore)
            }
            if protocolVersion == .v311, fellBackAfterDrop, dropped {
                // 3.1.1 was dropped as well: the broker was going away, not refusing MQTT 5.
                protocolVersion = .v5
                fellBackAfterDrop = false
            }
        }
        guard let connectedAt else {
            // An address that accepted a connection before is a broker: one now silent is frozen or cut off.
            let failure = acknowledged || protocolConfirmed ? failure : failure.withoutConnectionAcknowledgement(broker: configuration.brokerAddress)
            let delay = backoffDelay(atMost: configuration.maximumReconnectDelay)
            failedAttempts += 1
            let repeated = failure.message == lastReportedFailure
            lastReportedFailure = failure.message
            return .waitBeforeReconnect(delay, report: .attemptFailed(failure, repeated: repeated))
        }
        // A connection that ends soon after it was accepted counts as a failed attempt, so that the
        // wait grows instead of reconnecting at once forever (two clients with one client id take
        // the session from each other; a broker may accept and then drop).
        shortConnections = connectedAt.duration(to: now) >= Self.stableConnection ? 0 : shortConnections + 1
        failedAttempts = shortConnections
        lastReportedFailure = failure.message
        let delay = backoffDelay(atMost: configuration.maximumDelayAfterShortConnections)
        return .waitBeforeReconnect(delay, report: .connectionLost(warnAboutShortConnections: shortConnections == Self.shortConnectionsBeforeWarning))
    }

    /// `reconnectDelay`, doubled for each failed attempt, at most `cap`.
    private func backoffDelay(atMost cap: Duration) -> Duration { min(configuration.reconnectDelay * (1 << min(failedAttempts, 16)), cap) }

    /// The wait after a failed round ended (or disconnect() cut it short); also right after a protocol
    /// fallback. Returns the version to reconnect in (`MOSQ_OPT_PROTOCOL_VERSION`, then
    /// `mosquitto_reconnect_async`), or nil to stop the network thread.
    func reconnectDelayElapsed() -> MQTTProtocolVersion? { lifecycle != .stopping ? protocolVersion : nil }
}
