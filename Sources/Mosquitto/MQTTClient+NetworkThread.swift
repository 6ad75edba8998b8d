import CMosquitto
import Dispatch
import Glibc
import LinuxSystem
import Logging

extension MQTTClient {
    /// The body of the network thread: `mosquitto_connect_async`, then rounds of
    /// ``serviceConnection(keepalive:)``; after a failed round, what the state machine says and
    /// `mosquitto_reconnect_async`. Ends once ``disconnect()`` has asked for it.
    func runNetworkLoop() {
        var keepalive = startConnecting {
            mosquitto_connect_async(handle.pointer, configuration.connectHost, Int32(configuration.port), Int32(configuration.keepAlive))
        }
        connectionLoop: while true {
            let result = serviceConnection(keepalive: &keepalive)
            let loopErrno = errno
            completeConnectionSetup()
            if result == MOSQ_ERR_SUCCESS.rawValue { continue }
            let failure = MQTTError(mosquittoCode: result, errno: loopErrno, during: .connectionEnded, broker: configuration.brokerAddress)
            switch state.withLock({ $0.machine.connectionRoundFailed(failure, at: .now) }) {
            case .stopNetworkThread: break connectionLoop
            case .fallBackToMQTT311(let dropped, let repeated):
                logger.log(level: repeated ? .debug : .notice, dropped ? "MQTT broker dropped the MQTT 5 CONNECT; trying MQTT 3.1.1" : "MQTT broker refused MQTT 5; falling back to MQTT 3.1.1")
            case .waitBeforeReconnect(let delay, let report):
                log(report, delay: delay)
                _ = reconnectWaitInterrupt.wait(timeout: .now() + .nanoseconds(Int(delay.inNanoseconds)))
            }
            guard let version = state.withLock({ $0.machine.reconnectDelayElapsed() }) else { break }
            mosquitto_int_option(handle.pointer, MOSQ_OPT_PROTOCOL_VERSION, version == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311)
            keepalive = startConnecting { mosquitto_reconnect_async(handle.pointer) }
        }
        finishEvents(discarding: state.withLock { $0.machine.networkThreadEnded() })
    }

    /// Runs a connect call; a failure is recorded for the next round of the loop (which then returns
    /// at once, as there is no socket). Returns the keepalive schedule of the new connection.
    private func startConnecting(_ connectCall: () -> Int32) -> KeepaliveSchedule {
        let result = connectCall()
        let savedErrno = errno
        let failure = result == MOSQ_ERR_SUCCESS.rawValue
            ? nil
            : MQTTError(mosquittoCode: result, errno: savedErrno, during: .connect, broker: configuration.brokerAddress)
        if state.withLock({ $0.machine.connectCallReturned(failure: failure) }) {
            // disconnect() ran during the call: the new socket must not outlive it.
            mosquitto_disconnect(handle.pointer)
        }
        return KeepaliveSchedule(keepAlive: configuration.keepAlive, connectingAt: Self.monotonicNow())
    }

    /// One round of the network thread. It does what `mosquitto_loop` does (wait, `mosquitto_loop_read`,
    /// `mosquitto_loop_write`, `mosquitto_loop_misc`, and the same result), differently in three ways:
    /// - it waits in poll(2) on the socket and on ``networkWake``, which a burst of publishes signals
    ///   once. `mosquitto_loop` waits on a socket pair that libmosquitto writes a byte to for every
    ///   queued packet and reads one byte from per round: under load a round per packet. (Those
    ///   bytes are still written; unread, the pair fills and later writes fail at once.)
    /// - it writes what is queued with the socket corked (`TCP_CORK`), and uncorks once all is
    ///   handed to the kernel, which sends it at once (`TCP_NODELAY` is set): the document, event
    ///   and state of one change leave in one segment instead of one each, which spares this
    ///   thread and the broker a pass through the network stack per packet.
    /// - idle, it waits until `keepalive` says a PINGREQ is due rather than a fixed time, and writes
    ///   a PINGREQ in the round that queued it.
    ///
    /// A TLS connection keeps `mosquitto_loop`: packets that OpenSSL has already decrypted are
    /// invisible to poll(2), and `mosquitto_loop_read` goes on to them only until an `EAGAIN` in
    /// `errno`, which the full socket pair leaves behind whenever a packet read queues an answer.
    /// `mosquitto_loop` reads the pair, so its select(2) returns at once until they are handled.
    private func serviceConnection(keepalive: inout KeepaliveSchedule) -> Int32 {
        if state.withLock({ state in defer { state.disconnectDue = false }; return state.disconnectDue }) { mosquitto_disconnect(handle.pointer) }
        let timeout = keepalive.pollTimeoutMilliseconds(at: Self.monotonicNow())
        if configuration.tls != nil {
            let hadPackets = mosquitto_want_write(handle.pointer)
            let result = mosquitto_loop(handle.pointer, timeout, 1)
            let now = Self.monotonicNow()
            if hadPackets { keepalive.packetsWritten(at: now) }
            // A PINGREQ queued by the loop's own misc step leaves in the next call, at once.
            if !mosquitto_want_write(handle.pointer) { keepalive.keepaliveChecked(at: now) }
            return result
        }
        let socket = mosquitto_socket(handle.pointer)
        guard socket >= 0 else { return MOSQ_ERR_NO_CONN.rawValue }
        var descriptors = [
            pollfd(fd: socket, events: Int16(POLLIN) | (mosquitto_want_write(handle.pointer) ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: networkWake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&descriptors, nfds_t(descriptors.count), timeout) >= 0 else {
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
            if result != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(handle.pointer) < 0 { return result }
        }
        if descriptors[1].revents != 0 { networkWake.clear() }
        // Reading may have queued acknowledgements; a wake-up means packets were queued.
        if let result = writeIfQueued(socket, keepalive: &keepalive) { return result }
        let result = mosquitto_loop_misc(handle.pointer)
        guard result == MOSQ_ERR_SUCCESS.rawValue else { return result }
        if let result = writeIfQueued(socket, keepalive: &keepalive) { return result }
        keepalive.keepaliveChecked(at: Self.monotonicNow())
        return MOSQ_ERR_SUCCESS.rawValue
    }

    /// Writes what libmosquitto has queued, if anything, and tells `keepalive`. Returns a result
    /// that ends the round (a failure, or a socket closed by a sent DISCONNECT), else nil.
    private func writeIfQueued(_ socket: Int32, keepalive: inout KeepaliveSchedule) -> Int32? {
        guard mosquitto_want_write(handle.pointer) else { return nil }
        let result = writeQueued(socket)
        keepalive.packetsWritten(at: Self.monotonicNow())
        return result != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(handle.pointer) < 0 ? result : nil
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
        if mosquitto_socket(handle.pointer) == socket { _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &off, size) }
        return result
    }

    /// CLOCK_MONOTONIC, the clock of libmosquitto's keepalive.
    private static func monotonicNow() -> Duration { .nanoseconds(ClockReading.nanoseconds(CLOCK_MONOTONIC)) }

    /// After a round in which a CONNACK was accepted: sends every subscription again, flushes the
    /// buffer in publish order and marks the link up, under the send lock so that no publish
    /// overtakes the buffered ones. `.connected` follows once the broker has acknowledged the
    /// subscriptions (at once without any), so a consumer can rely on them.
    private func completeConnectionSetup() {
        var failures: [MQTTError] = []
        let outcome = sendLock.withLock { _ -> (setup: MQTTConnectionStateMachine.ConnectionSetup, connected: MQTTEvent?)? in
            guard let setup = state.withLock({ $0.machine.connectionSetupStarting() }) else { return nil }
            var resubscriptions: Set<Int32> = []
            for subscription in setup.subscriptions {
                do throws(MQTTError) {
                    if let messageID = try send(subscription) { resubscriptions.insert(messageID) }
                } catch { failures.append(error) }
            }
            for message in setup.messages {
                do throws(MQTTError) {
                    _ = try handOver(message, protocolVersion: setup.protocolVersion)
                } catch { failures.append(error) }
            }
            return (setup, state.withLock { $0.machine.connectionSetUp(resubscriptions: resubscriptions, at: .now) })
        }
        // What the setup queued leaves in the next round, whose poll(2) asks for POLLOUT.
        guard case let (setup, connected)? = outcome else { return }
        // Logged outside the locks: a log handler may itself publish through this client.
        for failure in failures {
            logger.error("MQTT connection setup could not send a subscription or a buffered message", metadata: ["error": "\(failure.message)"])
        }
        if setup.droppedCount > 0 {
            logger.warning("MQTT messages dropped while disconnected", metadata: [
                "mqtt.dropped": "\(setup.droppedCount)",
                "mqtt.buffer_limit": "\(configuration.outgoingBufferLimit)",
            ])
        }
        logger.info("MQTT connected", metadata: [
            "mqtt.protocol": "\(setup.protocolVersion)",
            "mqtt.session_present": "\(setup.sessionPresent)",
            "mqtt.flushed": "\(setup.messages.count)",
        ])
        if let connected { eventSink.yield(connected) }
    }

    /// Logs a failed round: a failed attempt when its reason changed (as an error when a setting
    /// must be fixed, as a warning when waiting may cure it), and at debug level while it repeats.
    private func log(_ report: MQTTConnectionStateMachine.FailureReport, delay: Duration) {
        switch report {
        case .connectionLost(let warnAboutShortConnections):
            // The loss itself was logged by the disconnect callback.
            guard warnAboutShortConnections else { return }
            logger.warning("MQTT connections keep ending soon after they start", metadata: [
                "hint": "another client may be connecting with the same client id, each taking the session from the other: give each one its own id (for alarmd: its own node.id); or the broker closes it for a message it refuses, as one over its max_packet_size over MQTT 3.1.1 (its log says why). Reconnecting with a growing wait",
            ])
        case .attemptFailed(let failure, let repeated):
            let metadata: Logger.Metadata = ["error": "\(failure.message)", "mqtt.retry_in": "\(delay)"]
            let waitingMayCure = failure.code == .connectionFailed || failure.code == .connectionRefused
            let level: Logger.Level = repeated ? .debug : waitingMayCure ? .warning : .error
            logger.log(level: level, "MQTT connection attempt failed", metadata: metadata)
        }
    }
}
