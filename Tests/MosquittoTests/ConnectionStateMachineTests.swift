import Testing

@testable import Mosquitto

/// The client's connection logic, input by input, without a broker or a clock: times are made up.
@Suite("Connection state machine")
struct ConnectionStateMachineTests {
    private typealias Machine = MQTTConnectionStateMachine
    private let start = ContinuousClock.now

    private func machine(bufferLimit: Int = 10) -> Machine {
        Machine(configuration: MQTTConfiguration(
            host: "pi", clientID: "node", reconnectDelay: .milliseconds(100), maximumReconnectDelay: .seconds(1),
            maximumDelayAfterShortConnections: .seconds(5), outgoingBufferLimit: bufferLimit
        ))
    }

    /// A connection the broker closed (`MOSQ_ERR_CONN_LOST`, 7) unless `code` says otherwise.
    private func lost(_ message: String = "lost", code: Int32 = 7) -> MQTTError {
        MQTTError(code: .connectionFailed, message: message, mosquittoCode: code)
    }

    /// A connection that was never made (`MOSQ_ERR_ERRNO`, 14: ECONNREFUSED, EHOSTUNREACH…).
    private func unreachable(_ message: String = "refused") -> MQTTError {
        MQTTError(code: .connectionFailed, message: message, mosquittoCode: 14)
    }

    /// Running, with an accepted CONNACK and its setup done (no subscriptions unless given).
    private func connected(_ machine: inout Machine, at time: ContinuousClock.Instant, sessionPresent: Bool = false) throws {
        if machine.lifecycle == .idle { try machine.connectRequested() }
        machine.connectionAcknowledged(sessionPresent: sessionPresent, refusal: nil)
        let started = machine.connectionSetupStarting()
        let setup = try #require(started)
        #expect(setup.subscriptions.isEmpty)
        do {
            let result = machine.connectionSetUp(resubscriptions: [], at: time)
            #expect(result == .connected(sessionPresent: sessionPresent))
        }
    }

    private func delay(of action: Machine.FailedRoundAction) -> Duration? {
        if case .waitBeforeReconnect(let delay, _) = action { delay } else { nil }
    }

    @Test("connect() once; twice is an error; after disconnect() the client is closed")
    func lifecycle() throws {
        var machine = machine()
        try machine.connectRequested()
        #expect(throws: MQTTError.self) { try machine.connectRequested() }
        do {
            let result = machine.disconnectRequested()
            #expect(result == .stopNetworkThread)
        }
        do {
            let result = machine.disconnectRequested()
            #expect(result == .awaitNetworkThread)
        }
        let closed = #expect(throws: MQTTError.self) { try machine.publishRequested(MQTTMessage(topic: "a", string: "x")) }
        #expect(closed?.code == .clientClosed)
        do {
            let result = machine.networkThreadEnded()
            #expect(result == 0)
        }
        do {
            let result = machine.disconnectRequested()
            #expect(result == .none)
        }
    }

    @Test("disconnect() before connect() finishes the events and counts the buffered messages")
    func disconnectBeforeConnect() throws {
        var machine = machine()
        do {
            let result = try machine.publishRequested(MQTTMessage(topic: "a", string: "x"))
            #expect(result == .buffered)
        }
        do {
            let result = machine.disconnectRequested()
            #expect(result == .finishEvents(discarding: 1))
        }
    }

    @Test("a network thread that cannot start returns to idle, or ends a disconnect() waiting for it")
    func threadStartFailure() throws {
        var machine = machine()
        try machine.connectRequested()
        do {
            let result = machine.networkThreadFailedToStart()
            #expect(result == nil, "back to idle")
        }
        try machine.connectRequested()
        _ = machine.disconnectRequested()
        do {
            let result = machine.networkThreadFailedToStart()
            #expect(result == 0, "finishes the events, discarding nothing")
        }
    }

    @Test("publishes while down are buffered, latest retained per topic, and flushed in order on the next setup")
    func bufferedUntilSetup() throws {
        var machine = machine(bufferLimit: 2)
        try machine.connectRequested()
        let messages = [
            MQTTMessage(topic: "state", string: "v1", retain: true), MQTTMessage(topic: "event", string: "1"),
            MQTTMessage(topic: "state", string: "v2", retain: true), MQTTMessage(topic: "event", string: "2"),
            MQTTMessage(topic: "event", string: "3"),
        ]
        for message in messages {
            do {
                let result = try machine.publishRequested(message)
                #expect(result == .buffered)
            }
        }
        do {
            let result = machine.connectionSetupStarting()
            #expect(result == nil, "no CONNACK yet")
        }
        machine.connectionAcknowledged(sessionPresent: true, refusal: nil)
        #expect(!machine.isConnected, "not up before the setup")
        let started = machine.connectionSetupStarting()
        let setup = try #require(started)
        #expect(setup.messages.map(\.payloadString) == ["v2", "2", "3"])
        #expect(setup.droppedCount == 1)
        #expect(setup.sessionPresent)
        #expect(machine.outgoing.isEmpty)
    }

    @Test("the birth message, the latest retained on its topic, leads every setup: before what was buffered while down")
    func birthFirst() throws {
        var machine = Machine(configuration: MQTTConfiguration(host: "pi", clientID: "node", birthTopic: "status"))
        try machine.connectRequested()
        func publish(_ message: MQTTMessage) throws -> Machine.PublishAction { try machine.publishRequested(message) }
        #expect(try publish(MQTTMessage(topic: "events", string: "rang")) == .buffered)
        #expect(try publish(MQTTMessage(topic: "status", string: "online 1", retain: true)) == .buffered)
        for (round, expected) in [["online 1", "rang"], ["online 2", "rang again"]].enumerated() {
            machine.connectionAcknowledged(sessionPresent: false, refusal: nil)
            let started = machine.connectionSetupStarting()
            let setup = try #require(started)
            #expect(setup.messages.map(\.payloadString) == expected)
            _ = machine.connectionSetUp(resubscriptions: [], at: start)
            guard round == 0 else { break }
            // Published while up, it is handed over as any message, and leads the next connection.
            #expect(try publish(MQTTMessage(topic: "status", string: "online 2", retain: true)) == .handOver(.v5))
            _ = machine.connectionEnded(reason: lost())
            _ = machine.connectionRoundFailed(lost(), at: start)
            #expect(try publish(MQTTMessage(topic: "events", string: "rang again")) == .buffered)
        }
    }

    @Test("subscriptions are sent again on every setup; .connected waits for their SUBACKs")
    func resubscriptionsAwaitSubacks() throws {
        var machine = machine()
        try machine.connectRequested()
        do {
            let result = try machine.subscribeRequested(.init(filter: "a/#", qos: 1, noLocal: true))
            #expect(result == .none, "down: sent at setup")
        }
        do {
            let result = try machine.subscribeRequested(.init(filter: "b", qos: 0, noLocal: false))
            #expect(result == .none)
        }
        do {
            let result = try machine.subscribeRequested(.init(filter: "a/#", qos: 0, noLocal: true))
            #expect(result == .none, "replaces the first")
        }
        for round in 0..<2 {
            machine.connectionAcknowledged(sessionPresent: false, refusal: nil)
            let started = machine.connectionSetupStarting()
            let setup = try #require(started)
            #expect(setup.subscriptions == [.init(filter: "a/#", qos: 0, noLocal: true), .init(filter: "b", qos: 0, noLocal: false)])
            machine.subscriptionSent(filter: "a/#", messageID: 10)
            machine.subscriptionSent(filter: "b", messageID: 11)
            do {
                let result = machine.connectionSetUp(resubscriptions: [10, 11], at: start)
                #expect(result == nil)
            }
            #expect(machine.isConnected)
            do {
                let result = machine.subscriptionAcknowledged(messageID: 11)
                #expect(result == ("b", nil))
            }
            let last = machine.subscriptionAcknowledged(messageID: 10)
            #expect(last.filter == "a/#")
            #expect(last.deliver == .connected(sessionPresent: false))
            if round == 0 {
                do {
                    let result = machine.connectionEnded(reason: lost())
                    #expect(result == .disconnected(reason: "lost"))
                }
                _ = machine.connectionRoundFailed(lost(), at: start)
            }
        }
    }

    @Test("a connection lost before its SUBACKs delivers no .connected for it")
    func lossBeforeSubacks() throws {
        var machine = machine()
        try machine.connectRequested()
        _ = try machine.subscribeRequested(.init(filter: "a", qos: 1, noLocal: false))
        machine.connectionAcknowledged(sessionPresent: false, refusal: nil)
        _ = machine.connectionSetupStarting()
        machine.subscriptionSent(filter: "a", messageID: 3)
        _ = machine.connectionSetUp(resubscriptions: [3], at: start)
        do {
            let result = machine.connectionEnded(reason: lost())
            #expect(result == .disconnected(reason: "lost"))
        }
        do {
            let result = machine.subscriptionAcknowledged(messageID: 3)
            #expect(result == (nil, nil))
        }
    }

    @Test("while up, publishes are handed over; QoS 1 ids are awaited until their PUBACK, a lost link ends the wait")
    func acknowledgements() throws {
        var machine = machine()
        try connected(&machine, at: start)
        let event = MQTTMessage(topic: "event", string: "1", qos: 1)
        do {
            let result = try machine.publishRequested(event)
            #expect(result == .handOver(.v5))
        }
        machine.publishHandedOver(event, outcome: .accepted(messageID: 5))
        machine.publishHandedOver(MQTTMessage(topic: "event", string: "0", qos: 0), outcome: .accepted(messageID: 6))
        #expect(machine.isAwaitingAcknowledgements)
        do {
            let result = machine.publishAcknowledged(messageID: 6)
            #expect(result.topic == nil && !result.allAcknowledged, "QoS 0 was never awaited")
        }
        do {
            let result = machine.publishAcknowledged(messageID: 5)
            #expect(result.topic == "event" && result.allAcknowledged, "its topic, to name it if the broker refused it")
        }
        #expect(!machine.isAwaitingAcknowledgements)

        machine.publishHandedOver(event, outcome: .accepted(messageID: 7))
        #expect(machine.isAwaitingAcknowledgements)
        _ = machine.connectionEnded(reason: lost())
        #expect(!machine.isAwaitingAcknowledgements, "no PUBACK comes on a lost connection")
    }

    @Test("a QoS 0 publish that found no socket goes back into the buffer")
    func notConnectedHandOver() throws {
        var machine = machine()
        try connected(&machine, at: start)
        let message = MQTTMessage(topic: "event", string: "late")
        machine.publishHandedOver(message, outcome: .notConnected)
        #expect(machine.outgoing.count == 1)
    }

    @Test("subscribing while up sends at once; No Local only on MQTT 5")
    func subscribeWhileUp() throws {
        var machine = machine()
        try connected(&machine, at: start)
        let subscription = Machine.Subscription(filter: "cmd/#", qos: 1, noLocal: true)
        do {
            let result = try machine.subscribeRequested(subscription)
            #expect(result == subscription)
        }

        var legacy = Machine(configuration: MQTTConfiguration(host: "pi", clientID: "node", protocolSetting: .v311))
        try connected(&legacy, at: start)
        do {
            let result = try legacy.subscribeRequested(subscription)
            #expect(result == .init(filter: "cmd/#", qos: 1, noLocal: false))
        }
    }

    @Test("a loss is delivered only for a connection that was up")
    func lossDelivery() throws {
        var machine = machine()
        try machine.connectRequested()
        do {
            let result = machine.connectionEnded(reason: lost())
            #expect(result == nil, "an attempt that failed is logged, not delivered")
        }
        _ = machine.connectionRoundFailed(lost(), at: start)
        try connected(&machine, at: start)
        do {
            let result = machine.connectionEnded(reason: lost("gone"))
            #expect(result == .disconnected(reason: "gone"))
        }
        #expect(!machine.isConnected)
    }

    @Test("while the broker is unreachable the wait doubles up to 1 s; a repeated reason is reported as such")
    func backoffWhileUnreachable() throws {
        var machine = machine()
        try machine.connectRequested()
        var delays: [Duration] = []
        var repeats: [Bool] = []
        for _ in 0..<6 {
            _ = machine.connectCallReturned(failure: unreachable("refused"))
            let action = machine.connectionRoundFailed(unreachable("no socket"), at: start)
            guard case .waitBeforeReconnect(let delay, .attemptFailed(let failure, let repeated)) = action else {
                Issue.record("expected a wait after a failed attempt, got \(action)")
                return
            }
            #expect(failure.message == "refused", "the connect call's failure explains more than the round's")
            delays.append(delay)
            repeats.append(repeated)
            #expect(machine.reconnectDelayElapsed() == .v5, "a connection never made is no reason to fall back")
        }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(repeats == [false, true, true, true, true, true])
    }

    @Test("connections that end soon after they start grow the wait to the 5 s cap and warn once; a stable one resets it")
    func shortConnections() throws {
        var machine = machine()
        var now = start
        var delays: [Duration] = []
        var warnings: [Bool] = []
        for _ in 0..<8 {
            try connected(&machine, at: now)
            now += .seconds(1)
            _ = machine.connectionEnded(reason: lost())
            let action = machine.connectionRoundFailed(lost(), at: now)
            guard case .waitBeforeReconnect(let delay, .connectionLost(let warn)) = action else {
                Issue.record("expected a wait after a lost connection, got \(action)")
                return
            }
            delays.append(delay)
            warnings.append(warn)
        }
        #expect(delays == [.milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                           .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5)])
        #expect(warnings == [false, false, true, false, false, false, false, false])

        try connected(&machine, at: now)
        _ = machine.connectionEnded(reason: lost())
        do {
            let result = delay(of: machine.connectionRoundFailed(lost(), at: now + Machine.stableConnection))
            #expect(result == .milliseconds(100))
        }
        #expect(machine.failedAttempts == 0)
    }

    @Test("a connection that ends soon after an outage waits as after one short connection, not as after the outage's failed attempts, and warns of nothing")
    func shortConnectionAfterOutage() throws {
        // The broker restarted twice in a row (an upgrade, an administrator fixing its
        // configuration): before, the second loss waited the 5 s cap, and after an outage of two
        // attempts the log blamed another client with the same client id.
        for attempts in [2, 10] {
            var machine = machine()
            try machine.connectRequested()
            for _ in 0..<attempts { _ = machine.connectionRoundFailed(unreachable(), at: start) }
            try connected(&machine, at: start)
            _ = machine.connectionEnded(reason: lost())
            let action = machine.connectionRoundFailed(lost(), at: start + .seconds(1))
            guard case .waitBeforeReconnect(let delay, .connectionLost(let warn)) = action else {
                Issue.record("expected a wait after a lost connection, got \(action)")
                return
            }
            #expect(delay == .milliseconds(200), "after \(attempts) failed attempts")
            #expect(!warn, "after \(attempts) failed attempts")
        }
    }

    @Test("an attempt closed before any CONNACK is reported as an address that may not be an MQTT broker; a connection lost later is not, nor a silent attempt to a broker that answered before")
    func closedBeforeAcknowledgement() throws {
        var machine = Machine(configuration: MQTTConfiguration(host: "pi", port: 8080, clientID: "node", protocolSetting: .v311))
        try machine.connectRequested()
        _ = machine.connectionEnded(reason: lost("lost the connection"))
        guard case .waitBeforeReconnect(_, .attemptFailed(let failure, _)) = machine.connectionRoundFailed(lost(), at: start) else {
            Issue.record("expected a failed attempt")
            return
        }
        #expect(failure.message.hasPrefix("pi:8080 closed the connection without answering the MQTT CONNECT: it may not be an MQTT broker"))

        try connected(&machine, at: start)
        _ = machine.connectionEnded(reason: lost("lost the connection"))
        guard case .waitBeforeReconnect(_, .connectionLost) = machine.connectionRoundFailed(lost(), at: start + .seconds(1)) else {
            Issue.record("expected a lost connection")
            return
        }
        // The broker froze: the next CONNECT gets no CONNACK. It answered MQTT before, so it is not "not a broker".
        let silent = MQTTError(mosquittoCode: 19, during: .connectionEnded, broker: "pi:8080")  // MOSQ_ERR_KEEPALIVE
        guard case .waitBeforeReconnect(_, .attemptFailed(let frozen, _)) = machine.connectionRoundFailed(silent, at: start + .seconds(20)) else {
            Issue.record("expected a failed attempt")
            return
        }
        #expect(frozen.message == "broker pi:8080 stopped answering keepalive pings: it is frozen or the network is cut; reconnecting")
    }

    @Test("a broker that refuses MQTT 5 makes it fall back to MQTT 3.1.1 once, at once")
    func protocolFallback() throws {
        var machine = machine()
        try machine.connectRequested()
        let refusal = MQTTError(code: .connectionRefused, message: "unsupported protocol version", mosquittoCode: 132)
        machine.connectionAcknowledged(sessionPresent: false, refusal: refusal)
        _ = machine.connectionEnded(reason: lost())
        guard case .fallBackToMQTT311(dropped: false, repeated: false) = machine.connectionRoundFailed(lost(), at: start) else {
            Issue.record("expected the fallback")
            return
        }
        #expect(machine.protocolVersion == .v311)
        #expect(machine.failedAttempts == 0, "the fallback is no failed attempt")
        #expect(machine.reconnectDelayElapsed() == .v311)

        machine.connectionAcknowledged(sessionPresent: false, refusal: refusal)
        do {
            let result = delay(of: machine.connectionRoundFailed(lost(), at: start))
            #expect(result == .milliseconds(100), "no second fallback")
        }
        try connected(&machine, at: start)
        let message = MQTTMessage(topic: "a", string: "x", correlationData: [1])
        do {
            let result = try machine.publishRequested(message)
            #expect(result == .handOver(.v311))
        }
    }

    @Test("a broker that drops the MQTT 5 CONNECT without a CONNACK gets 3.1.1 at once; 3.1.1 accepted is kept for every reconnect")
    func fallbackAfterDrop() throws {
        var machine = machine()
        try machine.connectRequested()
        _ = machine.connectionEnded(reason: lost("closed by RabbitMQ"))
        guard case .fallBackToMQTT311(dropped: true, repeated: false) = machine.connectionRoundFailed(lost(), at: start) else {
            Issue.record("expected the fallback")
            return
        }
        #expect(machine.reconnectDelayElapsed() == .v311)
        try connected(&machine, at: start)
        #expect(machine.protocolConfirmed)
        do {
            let result = try machine.publishRequested(MQTTMessage(topic: "a", string: "x"))
            #expect(result == .handOver(.v311))
        }
        // The broker restarts: lost, then dropped before any CONNACK: still 3.1.1, after a wait.
        _ = machine.connectionEnded(reason: lost())
        _ = machine.connectionRoundFailed(lost(), at: start + .seconds(60))
        _ = machine.connectionEnded(reason: lost())
        let action = machine.connectionRoundFailed(lost(), at: start + .seconds(61))
        #expect(delay(of: action) != nil)
        #expect(machine.reconnectDelayElapsed() == .v311)
    }

    @Test("once MQTT 5 was accepted, a CONNECT dropped later does not make it fall back")
    func mqtt5Remembered() throws {
        var machine = machine()
        try connected(&machine, at: start)
        _ = machine.connectionEnded(reason: lost())
        _ = machine.connectionRoundFailed(lost(), at: start + .seconds(60))
        for second in 61..<64 {
            _ = machine.connectionEnded(reason: lost("dropped while the broker restarts"))
            let action = machine.connectionRoundFailed(lost(), at: start + .seconds(second))
            #expect(delay(of: action) != nil)
            #expect(machine.reconnectDelayElapsed() == .v5)
        }
    }

    @Test("3.1.1 dropped as well after a drop: back to MQTT 5 after the usual wait (the broker was going away)")
    func dropOnBothVersions() throws {
        var machine = machine()
        try machine.connectRequested()
        _ = machine.connectionEnded(reason: lost())
        _ = machine.connectionRoundFailed(lost(), at: start)
        #expect(machine.protocolVersion == .v311)
        _ = machine.connectionEnded(reason: lost())
        let action = machine.connectionRoundFailed(lost(), at: start)
        #expect(delay(of: action) == .milliseconds(100))
        #expect(machine.reconnectDelayElapsed() == .v5)
        // A refusal by CONNACK is final: 3.1.1 dropped afterwards stays 3.1.1.
        machine.connectionAcknowledged(sessionPresent: false, refusal: MQTTError(code: .connectionRefused, message: "unsupported", mosquittoCode: 132))
        _ = machine.connectionRoundFailed(lost(), at: start)
        #expect(machine.protocolVersion == .v311)
        _ = machine.connectionEnded(reason: lost())
        _ = machine.connectionRoundFailed(lost(), at: start)
        #expect(machine.reconnectDelayElapsed() == .v311)
    }

    @Test("every fallback after the first is reported as repeated: until a broker answers, each attempt to a proxy that accepts and closes falls back")
    func repeatedFallback() throws {
        var machine = machine()
        try machine.connectRequested()
        var reports: [Bool] = []
        for _ in 0..<3 {
            _ = machine.connectionEnded(reason: lost())
            if case .fallBackToMQTT311(dropped: true, let repeated) = machine.connectionRoundFailed(lost(), at: start) { reports.append(repeated) }
            _ = machine.connectionEnded(reason: lost())
            _ = machine.connectionRoundFailed(lost(), at: start)
            #expect(machine.reconnectDelayElapsed() == .v5)
        }
        #expect(reports == [false, true, true])
    }

    @Test("a pinned version never changes: 5 is not given up when dropped or refused; 3.1.1 starts as 3.1.1")
    func pinnedVersions() throws {
        var pinned5 = Machine(configuration: MQTTConfiguration(host: "pi", clientID: "node", protocolSetting: .v5))
        try pinned5.connectRequested()
        _ = pinned5.connectionEnded(reason: lost())
        #expect(delay(of: pinned5.connectionRoundFailed(lost(), at: start)) != nil)
        pinned5.connectionAcknowledged(sessionPresent: false, refusal: MQTTError(code: .connectionRefused, message: "unsupported", mosquittoCode: 132))
        #expect(delay(of: pinned5.connectionRoundFailed(lost(), at: start)) != nil)
        #expect(pinned5.reconnectDelayElapsed() == .v5)

        var pinned311 = Machine(configuration: MQTTConfiguration(host: "pi", clientID: "node", protocolSetting: .v311))
        #expect(pinned311.protocolVersion == .v311)
        try pinned311.connectRequested()
        _ = pinned311.connectionEnded(reason: lost())
        _ = pinned311.connectionRoundFailed(lost(), at: start)
        _ = pinned311.connectionEnded(reason: lost())
        _ = pinned311.connectionRoundFailed(lost(), at: start)
        #expect(pinned311.reconnectDelayElapsed() == .v311)
    }

    @Test("the setting's words")
    func settingWords() {
        #expect(MQTTProtocolSetting(rawValue: "auto") == .auto)
        #expect(MQTTProtocolSetting(rawValue: "5") == .v5)
        #expect(MQTTProtocolSetting(rawValue: "3.1.1") == .v311)
        #expect(MQTTProtocolSetting(rawValue: "3") == nil)
    }

    @Test("once disconnect() is asked for, the network thread stops instead of reconnecting")
    func stopping() throws {
        var machine = machine()
        try connected(&machine, at: start)
        do {
            let result = try machine.publishRequested(MQTTMessage(topic: "a", string: "x"))
            #expect(result == .handOver(.v5))
        }
        do {
            let result = machine.disconnectRequested()
            #expect(result == .stopNetworkThread)
        }
        do {
            let result = machine.connectCallReturned(failure: nil)
            #expect(result, "a connect call racing with disconnect() sends DISCONNECT")
        }
        _ = machine.connectionEnded(reason: MQTTError(code: .clientClosed, message: "bye", mosquittoCode: 0))
        guard case .stopNetworkThread = machine.connectionRoundFailed(lost(), at: start) else {
            Issue.record("expected the thread to stop")
            return
        }
        #expect(machine.reconnectDelayElapsed() == nil)
        do {
            let result = machine.networkThreadEnded()
            #expect(result == 0)
        }
        #expect(machine.lifecycle == .stopped)
    }
}

@Suite("Keepalive schedule")
struct KeepaliveScheduleTests {
    @Test("the check is due at the whole second libmosquitto pings at: the last write's second plus keepalive")
    func dueAfterLastWrite() {
        var schedule = KeepaliveSchedule(keepAlive: 15, connectingAt: .milliseconds(100_700))
        #expect(schedule.nextCheck == .seconds(115))
        #expect(schedule.pollTimeoutMilliseconds(at: .milliseconds(100_700)) == 14_310)
        schedule.packetsWritten(at: .milliseconds(103_999))
        #expect(schedule.nextCheck == .seconds(118))
        #expect(schedule.pollTimeoutMilliseconds(at: .milliseconds(117_999)) == 11)
        #expect(schedule.pollTimeoutMilliseconds(at: .seconds(118)) == 0)
    }

    @Test("every write within a keepalive leaves the next ping inside the broker's 1.5 × keepalive, never before libmosquitto's")
    func neverLateNeverEarly() {
        for keepAlive in [5, 15, 60] {
            for millisecond in stride(from: 0, to: 3_000, by: 37) {
                let written = Duration.seconds(1_000) + .milliseconds(millisecond)
                var schedule = KeepaliveSchedule(keepAlive: keepAlive, connectingAt: .seconds(900))
                schedule.packetsWritten(at: written)
                let wake = written + .milliseconds(Int64(schedule.pollTimeoutMilliseconds(at: written)))
                // libmosquitto: now (whole seconds) >= written (whole seconds) + keepalive.
                #expect(wake.components.seconds >= written.components.seconds + Int64(keepAlive))
                #expect(wake < written + .seconds(keepAlive) + .milliseconds(20))
            }
        }
    }

    @Test("a check that found nothing due looks again a second later rather than spinning")
    func recheckAfterUnseenWrite() {
        var schedule = KeepaliveSchedule(keepAlive: 5, connectingAt: .seconds(10))
        schedule.keepaliveChecked(at: .milliseconds(12_000))
        #expect(schedule.nextCheck == .seconds(15), "not due yet: unchanged")
        schedule.keepaliveChecked(at: .milliseconds(15_004))
        #expect(schedule.nextCheck == .seconds(16))
        #expect(schedule.pollTimeoutMilliseconds(at: .milliseconds(15_004)) == 1_006)
    }
}
