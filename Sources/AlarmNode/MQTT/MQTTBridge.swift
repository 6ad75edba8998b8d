import AlarmHardware
import AlarmKit
import FoundationEssentials
import Logging
import Mosquitto
import ServiceLifecycle
import Synchronization

/// Speaks the MQTT contract of docs/mqtt.md for one node: mirrors its state (retained), reports
/// events, and runs the commands it receives.
///
/// Publishing is non-blocking and may be called from anywhere (the node's delegate calls it);
/// `run()` connects and handles incoming messages until graceful shutdown, then publishes the
/// offline status and disconnects cleanly.
public final class MQTTBridge: Service, Sendable {
    private let client: MQTTClient
    private let topics: NodeTopics
    /// The node's id, named in the replies to group commands.
    private let nodeID: String
    /// The groups the node belongs to, with their topics (`<prefix>/groups/<group>`).
    private let groups: [(name: String, topics: NodeTopics)]
    private let node: LocalAlarmNode
    private let logger: Logger
    private let status: Mutex<NodeStatus>
    /// The ids the node holds, for clearing retained alarm topics that no longer exist.
    private let knownAlarms: Mutex<Set<UUID>>
    /// The alarms whose state files were damaged at this start, which their retained documents may bring back.
    private let restorable: Mutex<Set<UUID>>
    /// The virtual hardware in simulation mode, pressed from `<base>/sim/press`.
    private let simulation: HardwareParts.Simulation?
    private let homeAssistant: HomeAssistantDiscovery
    private let announcesToHomeAssistant: Bool
    private let homeAssistantMirror: HomeAssistantMirror
    /// What became of the last line written to Home Assistant's text entity.
    private let scheduleResult = Mutex(HomeAssistantScheduleResult.ready)
    /// How many times the client connected: a republication stops when a newer connection starts its own.
    private let connections = Atomic<Int>(0)
    private let listReplies = ListReplyEncoder()
    /// Where a reply may not go: a node's commands, buttons or state (``IntentTopics/protection(of:)``).
    private let protectedTopics: IntentTopics
    /// A value each time the bridge sends (buffering one): the heap is tidied after bursts.
    public let sendingBursts: AsyncStream<Void>
    private let sending: AsyncStream<Void>.Continuation
    private let sentCount = Atomic<Int>(0)
    /// How many times the bridge sent so far.
    public var messagesSent: Int { sentCount.load(ordering: .relaxed) }

    /// A press of the virtual hardware, from `<base>/sim/press`.
    private struct SimulatedPress: Decodable {
        var button: String
        var duration: TimeInterval
    }

    /// - Parameters:
    ///   - client: configured with `topics.status` as its birth topic, which republishes the
    ///     status first on every connection.
    ///   - configuration: the node's id and topics; its groups, whose commands the node takes as
    ///     its own; Home Assistant's discovery, which when off removes the node's entities instead
    ///     of announcing them.
    ///   - status: the initial status (version, start time, zone, authorization, problems, groups).
    ///   - simulation: set in simulation mode: `<base>/sim/press` is then subscribed.
    public init(client: MQTTClient, configuration: NodeConfiguration, node: LocalAlarmNode, status: NodeStatus,
                knownAlarms: Set<UUID>, damagedAlarms: Set<UUID> = [], simulation: HardwareParts.Simulation?, logger: Logger) {
        let prefix = configuration.node.topicPrefix
        self.client = client
        self.topics = configuration.topics
        self.nodeID = configuration.node.id
        self.protectedTopics = IntentTopics(prefix: prefix, node: nodeID)
        self.groups = configuration.node.groups.map { ($0, NodeTopics.group($0, prefix: prefix)) }
        self.node = node
        self.status = Mutex(status)
        self.knownAlarms = Mutex(knownAlarms)
        self.restorable = Mutex(damagedAlarms)
        self.homeAssistant = HomeAssistantDiscovery(prefix: configuration.homeAssistant.prefix, topics: topics, nodeID: nodeID,
                                                    version: AlarmdVersion.current)
        self.announcesToHomeAssistant = configuration.homeAssistant.discovery
        self.homeAssistantMirror = HomeAssistantMirror(discovery: homeAssistant)
        (sendingBursts, sending) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.simulation = simulation
        self.logger = logger
    }

    // MARK: Publishing

    /// Publishes what the engine's effects call for (documents, removals, events, intents) and
    /// what Home Assistant shows, together: the client sends them in one go.
    public func publish(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
        let outgoing = EffectMessages(effects, topics: topics)
        for intent in outgoing.intents {
            if let reason = intent.refusal {
                logger.warning("intent not run: its topic is not allowed", metadata: [
                    "alarmID": "\(intent.alarmID)", "topic": "\(intent.topic)", "reason": "\(reason)"])
            } else {
                logger.info("intent run", metadata: ["alarmID": "\(intent.alarmID)", "topic": "\(intent.topic)"])
            }
        }
        // Known and sent in one step: see clearIfStale.
        knownAlarms.withLock { known in
            for (id, isKnown) in outgoing.knownChanges { if isKnown { known.insert(id) } else { known.remove(id) } }
            send(outgoing.messages)
        }
        // After the send: the journal is where an operator asks why an alarm did not ring.
        for case .event(let event) in effects where [.alerting, .silenced, .missed].contains(event.name) {
            logger.notice("alarm event", metadata: ["event": "\(event.name.rawValue)", "alarmID": "\(event.alarmID?.uuidString ?? "")", "details": "\(String(decoding: Self.encode(event.details), as: UTF8.self))"])
        }
        if announcesToHomeAssistant { homeAssistantMirror.update(engine, alarmsChanged: !outgoing.knownChanges.isEmpty) }
        updateStatus { status in
            status.alarms = engine.records.count
            status.authorization = authorization
        }
    }

    /// Announces the node's entities to Home Assistant, or removes them when discovery is off.
    private func announceToHomeAssistant() async {
        for (topic, configuration) in homeAssistant.configurations() {
            publish(MQTTMessage(topic: topic, payload: announcesToHomeAssistant ? Self.encode(configuration) : [], qos: 1, retain: true))
        }
        // On the node's actor, where changes are noted too: a change made meanwhile is not
        // overwritten by an older state.
        if announcesToHomeAssistant {
            await node.withEngine { self.homeAssistantMirror.update($0, alarmsChanged: true, force: true) }
            publishScheduleResult(nil)
        }
    }

    /// Publishes an event that does not come from the engine (a button press).
    public func publish(event: AlarmEvent) {
        publish(MQTTMessage(topic: topics.events, payload: Self.encode(event), qos: 1, retain: false))
    }

    /// Publishes one message: the simulation's outputs, and the bridge's own single messages.
    public func publish(_ message: MQTTMessage) { send([message]) }

    /// Changes the status and publishes it when it differs.
    /// Sent under the lock, so that statuses reach the client in the order they were made.
    public func updateStatus(_ change: (inout NodeStatus) -> Void) {
        status.withLock { status in
            let before = status
            change(&status)
            if status != before { publishStatus(status) }
        }
    }

    private func publishStatus(_ status: NodeStatus) {
        publish(MQTTMessage(topic: topics.status, payload: Self.encode(status), qos: 1, retain: true))
    }

    /// Sends `messages` together (one wake-up of the client's network thread for all); returns the failures, logged.
    @discardableResult
    private func send(_ messages: [MQTTMessage]) -> [(message: MQTTMessage, error: MQTTError)] {
        sentCount.add(1, ordering: .relaxed)
        sending.yield()
        let failures = client.publish(messages)
        for (message, error) in failures {
            logger.warning("publish failed", metadata: ["topic": "\(message.topic)", "error": "\(error)"])
        }
        return failures
    }

    static func encode(_ value: some Encodable) -> [UInt8] { (try? AlarmJSON.encode(value)) ?? [] }

    // MARK: Running

    /// Connects, then handles connections and messages until graceful shutdown or cancellation.
    public func run() async throws {
        try client.subscribe(topics.commandsFilter, qos: 1)
        for group in groups { try client.subscribe(group.topics.commandsFilter, qos: 1) }
        // For retained alarm topics that no longer exist (`clearIfStale`): the broker sends them at
        // subscription. Without No Local every document the node publishes would also come back
        // to it, one more message each way through the broker for every change.
        try client.subscribe(topics.alarmsFilter, qos: 1, noLocal: true)
        if simulation != nil { try client.subscribe(topics.simulatedPress, qos: 1) }
        if announcesToHomeAssistant { for filter in homeAssistant.commandTopics { try client.subscribe(filter, qos: 1) } }
        // The status is the client's birth message: it goes first on every connection, so that
        // subscribers hear the node is online before the events of what it did while away.
        status.withLock { publishStatus($0) }
        try client.connect()
        await withDiscardingTaskGroup { group in
            if announcesToHomeAssistant { group.addTask { await self.homeAssistantMirror.run { self.send($0) } } }
            // Graceful shutdown cancels the loop, which then stops at the next event. The loop reads
            // the client's events directly: merged with the shutdown signal (`cancelOnGracefulShutdown()`
            // on the sequence), every event would go through one more task, one more thread wake-up.
            await cancelWhenGracefulShutdown { await self.handleEvents() }
            group.cancelAll()
        }
        // The offline status, then a clean disconnect (which suppresses the will).
        logger.info("going offline")
        updateStatus { $0 = .offline(since: Date(), groups: $0.groups) }
        await client.disconnect()
    }

    /// Handles connections and messages until the events end or the task is cancelled. Events
    /// still queued when it is cancelled are left alone, as a stopped node would: a command among
    /// them gets no reply and changes nothing, rather than a change whose reply might be lost.
    private func handleEvents() async {
        await withDiscardingTaskGroup { group in
            for await event in client.events {
                guard !Task.isCancelled else { break }
                switch event {
                case .connected:
                    logger.info("broker connected; republishing state")
                    let connection = connections.add(1, ordering: .sequentiallyConsistent).newValue
                    // Beside the commands, which need not wait for every document to go out.
                    group.addTask {
                        let isCurrent = { @Sendable in self.connections.load(ordering: .sequentiallyConsistent) == connection }
                        await self.republishEverything(while: isCurrent)
                        guard isCurrent(), !Task.isCancelled else { return }
                        await self.announceToHomeAssistant()
                    }
                case .disconnected(let reason):
                    logger.warning("broker connection lost; alarms keep running locally", metadata: ["reason": "\(reason)"])
                case .message(let message) where message.retain && takesCommands(message.topic):
                    refuseRetained(message)
                case .message(let message) where message.topic == homeAssistant.scheduleTopic && announcesToHomeAssistant:
                    // Applied in line, so that `cancel Work` then `07:00 Work` keep their order; the
                    // outcome waits for the disk beside the next messages. While the node may prompt
                    // for authorization, scheduling waits for the prompt: all of it out of line.
                    if await node.authorizationState == .notDetermined {
                        group.addTask { await self.show(await self.applyFromHomeAssistant(message)) }
                    } else {
                        let outcome = await applyFromHomeAssistant(message)
                        group.addTask { await self.show(outcome) }
                    }
                case .message(let message) where command(inTopic: message.topic) != nil:
                    let operation = command(inTopic: message.topic).flatMap { NodeCommand.Operation(rawValue: $0.operation) }
                    if [.schedule, .requestAuthorization].contains(operation), await node.authorizationState == .notDetermined {
                        // Scheduling while undetermined waits for the hardware prompt: not in line.
                        group.addTask { await self.runCommand(message) }
                    } else {
                        // Commands are applied in arrival order; each reply waits for its own
                        // write, without holding up the next command.
                        await runCommand(message)
                    }
                case .message(let message):
                    await handle(message)
                }
            }
        }
    }

    /// How many documents `republishEverything` sends per turn on the node's actor.
    static let republishChunk = 25

    /// After a (re)connect the broker may have lost everything: every alarm again (the client sent
    /// the status first, as its birth message).
    ///
    /// The documents go out a chunk at a time, each chunk read and sent in one turn on the node's
    /// actor: a change published meanwhile is never overtaken by an older copy of its document,
    /// and an alarm falling due waits for one chunk at most, not for every alarm. Commands are
    /// handled meanwhile. Stops between chunks when `isCurrent` turns false (a newer connection
    /// republishes everything itself) or on cancellation.
    private func republishEverything(while isCurrent: @Sendable () -> Bool) async {
        let ids: [UUID] = await node.withEngine { engine in
            let ids = Array(engine.records.keys)
            knownAlarms.withLock { $0 = Set(ids) }
            return ids
        }
        for start in stride(from: 0, to: ids.count, by: Self.republishChunk) {
            guard isCurrent(), !Task.isCancelled else { break }
            let chunk = ids[start..<min(start + Self.republishChunk, ids.count)]
            await node.withEngine { engine in
                // An alarm removed meanwhile is skipped: its removal has been published.
                _ = send(chunk.compactMap { id in
                    engine.document(for: id).map { MQTTMessage(topic: topics.alarm(id), payload: Self.encode($0), qos: 1, retain: true) }
                })
            }
        }
    }

    /// The operation of a command topic, the node's own or one of its groups' (then with the group).
    private func command(inTopic topic: String) -> (operation: String, group: String?)? {
        if let operation = topics.operationName(inTopic: topic) { return (operation, nil) }
        return groups.lazy.compactMap { group in group.topics.operationName(inTopic: topic).map { ($0, group.name) } }.first
    }

    /// Whether messages on `topic` act on the node: its and its groups' commands, simulated
    /// presses and Home Assistant's buttons and text (not the birth message, nor alarm documents).
    private func takesCommands(_ topic: String) -> Bool {
        command(inTopic: topic) != nil || topic == topics.simulatedPress
            || (homeAssistant.commandTopics.contains(topic) && topic != homeAssistant.birthTopic)
    }

    /// A command that came as a retained message is not run: it would run again at every
    /// subscription (each start and reconnect), and the broker marks as retained only what it
    /// replays then. A command that names where to reply is told why.
    private func refuseRetained(_ message: MQTTMessage) {
        logger.warning("retained command ignored: send commands without retain; clear it with an empty retained message",
                       metadata: ["topic": "\(message.topic)"])
        guard let (operation, group) = command(inTopic: message.topic) else { return }
        let route = switch NodeCommand.decode(operation: operation, payload: message.payload, responseTopic: message.responseTopic,
                                              correlationData: message.correlationData, group: group) {
        case .success(let command): command.replyRoute
        case .failure(let rejection): rejection.replyRoute
        }
        let reason = "the command came as a retained message, which would run at every start of the node: publish commands without retain, and clear this one with an empty retained message"
        reply(.failure(.node(.badRequest(field: nil, reason: reason))), to: route, namesNode: group != nil)
    }

    private func handle(_ message: MQTTMessage) async {
        if let id = topics.alarmID(inTopic: message.topic) {
            if restorable.withLock({ $0.remove(id) }) != nil, await restore(id, from: message) { return }
            clearIfStale(id, message)
        } else if message.topic == topics.simulatedPress, let simulation {
            guard let press = try? JSONDecoder().decode(SimulatedPress.self, from: Data(message.payload)),
                  let button = Button(rawValue: press.button), press.duration.isFinite, (0...60).contains(press.duration) else {
                logger.warning("simulated press ignored: expected {\"button\":\"stop\"|\"snooze\",\"duration\":0.1}",
                               metadata: ["payload": "\(message.payloadString ?? "<binary>")"])
                return
            }
            // The press lasts `duration`: it runs beside the bridge, which keeps handling messages.
            Task { try? await simulation.buttons.press(button, duration: .seconds(press.duration)) }
        } else if message.topic == homeAssistant.birthTopic, message.payloadString == "online" {
            logger.info("Home Assistant came online; announcing the node again")
            await announceToHomeAssistant()
        } else if [homeAssistant.stopTopic, homeAssistant.snoozeTopic, homeAssistant.cancelTimersTopic].contains(message.topic) {
            logger.info("Home Assistant button pressed", metadata: ["topic": "\(message.topic)"])
            let refusals = switch message.topic {
            case homeAssistant.cancelTimersTopic: await ButtonActions.apply(source: .homeAssistant, on: node) { engine, _ in ButtonActions.cancelTimers(engine: engine) }
            default: await ButtonActions.press(message.topic == homeAssistant.stopTopic ? .stop : .snooze, .short, on: node, source: .homeAssistant)
            }
            for (action, error) in refusals {
                logger.notice("Home Assistant button action refused", metadata: ["action": "\(action)", "error": "\(error.message)"])
            }
        }
    }

    /// Applies what was written to Home Assistant's text entity: schedules it (`10m Tea`, `07:00
    /// weekdays Work`), or cancels (`cancel Work`). Returns its outcome for the text entity, which
    /// waits for the disk: what was scheduled or cancelled, or the error with the accepted forms.
    private func applyFromHomeAssistant(_ message: MQTTMessage) async -> @Sendable () async -> HomeAssistantScheduleResult {
        let line = message.payloadString ?? ""
        let words = line.split(whereSeparator: \.isWhitespace)
        do throws(HumanSyntaxError) {
            try RequestLine.requireOneLine(line)
            if words.first?.lowercased() == "cancel" {
                return await cancelFromHomeAssistant(line, naming: words.dropFirst().joined(separator: " "))
            }
            let request = try RequestLine(parsing: line)
            let timeZone = await node.withEngine { $0.configuration.timeZone }
            let submission = await node.submit(.schedule(id: UUID(), configuration: try request.configuration(in: timeZone), group: nil),
                                               source: .homeAssistant)
            return { [node] in
                switch await node.waitUntilDurable(submission) {
                case .alarm(let document?): .scheduled(line, document, timeZone: timeZone)
                case .failure(let failure): .refused(line, message: failure.message)
                default: .refused(line, message: "the node did not schedule it")
                }
            }
        } catch {
            let message = "\(error.message); or write cancel and an alarm's title or id"
            return { .refused(line, message: message) }
        }
    }

    /// `cancel Work`: cancels every alarm titled `target` (in any case); else the one whose id it
    /// is or starts with (at least 4 characters, so that a short word cancels nothing by chance).
    private func cancelFromHomeAssistant(_ line: String, naming target: String) async -> @Sendable () async -> HomeAssistantScheduleResult {
        let (titled, byID) = await node.withEngine { engine in
            let records = engine.records.values.map { ($0.id, $0.configuration.attributes.presentation.alert.title) }
            return (records.filter { $0.1.lowercased() == target.lowercased() }, records.filter { $0.0.starts(withIDText: target) })
        }
        let longEnough = target.filter { $0 != "-" }.count >= 4
        let matches = titled.isEmpty && longEnough ? byID : titled
        let ids = matches.map(\.0), title = matches.first?.1 ?? target
        let problem = target.isEmpty ? "cancel needs an alarm"
            : ids.isEmpty && !byID.isEmpty ? "'\(target)' is too short for an id: write at least 4 of its characters"
            : ids.isEmpty ? "no alarm has the title or id '\(target)'"
            : titled.isEmpty && ids.count > 1 ? "'\(target)' starts \(ids.count) alarms' ids: write more of the id"
            : nil
        if let problem {
            return { .refused(line, message: "\(problem): write cancel and a title or an id (its first 8 characters are enough), as the Alarms sensor lists them") }
        }
        var submissions: [(UUID, LocalAlarmNode.Submission)] = []
        for id in ids { submissions.append((id, await node.submit(.alarm(.cancel, id: id), source: .homeAssistant))) }
        return { [node, submissions] in
            var cancelled: [UUID] = []
            for (id, submission) in submissions {
                switch await node.waitUntilDurable(submission) {
                case .failure(.node(.notFound)): continue  // gone since: stopped at the bedside, say
                case .failure(let failure): return .refused(line, message: failure.message)
                default: cancelled.append(id)
                }
            }
            return .cancelled(line, title, ids: cancelled)
        }
    }

    /// Shows a line's outcome on the text entity, once it is known.
    private func show(_ outcome: @Sendable () async -> HomeAssistantScheduleResult) async {
        let result = await outcome()
        logger.info("Home Assistant schedule", metadata: ["input": "\(result.input ?? "")", "outcome": "\(result.state)"])
        publishScheduleResult(result)
    }

    /// Publishes the text entity's state: `result` when given, else the last one again.
    private func publishScheduleResult(_ result: HomeAssistantScheduleResult?) {
        scheduleResult.withLock { last in
            if let result { last = result }
            publish(MQTTMessage(topic: homeAssistant.scheduleResultTopic, payload: Self.encode(last), qos: 1, retain: true))
        }
    }

    /// Schedules again, from its retained document (the node's own last copy), an alarm whose state
    /// file was damaged: one with a date or days, as it was scheduled (a snooze or pause is not kept).
    private func restore(_ id: UUID, from message: MQTTMessage) async -> Bool {
        guard let document = try? AlarmJSON.decoder.decode(AlarmDocument.self, from: Data(message.payload)),
              document.id == id, document.configuration.schedule != nil, await node.authorizationState == .authorized,
              case .alarm(.some) = await node.submit(.schedule(id: id, configuration: document.configuration, group: document.group)).reply else { return false }
        logger.notice("alarm restored from its retained document on the broker: its state file was damaged", metadata: ["alarmID": "\(id)"])
        updateStatus { $0.stateFileProblem = ($0.stateFileProblem ?? "") + "; alarm \(id.uuidString) came back from its retained copy on the broker" }
        return true
    }

    /// A retained alarm topic the node does not hold any more is cleared.
    ///
    /// The check and the clear happen under the lock under which `publish` records an alarm and
    /// hands its document to the client, so the two reach the broker in the order they were
    /// decided: an alarm that the node adds meanwhile (a schedule that waited for the authorization
    /// prompt) has its document sent after the clear, never cleared by it.
    private func clearIfStale(_ id: UUID, _ message: MQTTMessage) {
        guard !message.payload.isEmpty else { return }
        let cleared = knownAlarms.withLock { known in
            guard !known.contains(id) else { return false }
            publish(MQTTMessage(topic: message.topic, payload: [], qos: 1, retain: true))
            return true
        }
        if cleared { logger.info("cleared the retained topic of an alarm that no longer exists", metadata: ["alarmID": "\(id)"]) }
    }

    /// Reads a command and applies it to the node, then answers it once its change is durable:
    /// at once for a rejection or a read, else from the state writer's thread right after the
    /// write (no task waits for it).
    private func runCommand(_ message: MQTTMessage) async {
        let (operation, group) = command(inTopic: message.topic) ?? ("", nil)
        switch NodeCommand.decode(operation: operation, payload: message.payload, responseTopic: message.responseTopic,
                                  correlationData: message.correlationData, group: group) {
        case .failure(let rejection):
            logger.notice("command rejected", metadata: [
                "operation": "\(operation)", "code": "\(rejection.error.code.rawValue)", "reason": "\(rejection.error.message)",
            ])
            reply(.failure(.node(rejection.error)), to: rejection.replyRoute, namesNode: group != nil)
        case .success(let command):
            if let sentAt = command.sentAt, AlarmEngine.countdownOrigin(sentAt: sentAt, now: Date()) != sentAt {
                logger.notice("the command's sentAt is too far from this node's clock: a countdown counts from its arrival; check the clocks (NTP)",
                              metadata: ["operation": "\(operation)", "sentAt": "\(AlarmJSON.string(from: sentAt))"])
            }
            let submission = await node.submit(command.action, sentAt: command.sentAt)
            let route = command.replyRoute
            // Encoded while the disk works: once the change is durable, it only has to be sent.
            let prepared = replyMessage(submission.reply, to: route, namesNode: group != nil)
            node.whenDurable(submission) { [self] result in
                if case .failure(let error) = result {
                    logger.notice("command refused", metadata: [
                        "operation": "\(operation)", "code": "\(error.code.rawValue)", "reason": "\(error.message)",
                    ])
                    reply(result, to: route, namesNode: group != nil)
                } else if let prepared { publishReply(prepared, to: route, namesNode: group != nil) }
            }
        }
    }

    private func reply(_ reply: NodeReply, to route: NodeCommand.ReplyRoute?, namesNode: Bool) {
        if let message = replyMessage(reply, to: route, namesNode: namesNode) { publishReply(message, to: route, namesNode: namesNode) }
    }

    /// Sends a reply; one larger than the broker takes is answered with an error that says so, and that
    /// the command was carried out, rather than left for the requester to wait for until it gives up.
    private func publishReply(_ message: MQTTMessage, to route: NodeCommand.ReplyRoute?, namesNode: Bool) {
        guard let failure = send([message]).first, failure.error.isTooLargeForBroker else { return }
        let reason = "the command was carried out (a schedule's alarm is in effect; do not send it again), but its reply (\(message.payload.count) bytes, and its topic) is larger than the broker takes (its max_packet_size): raise that limit, or ask for less (a list of fewer alarms)"
        if let error = replyMessage(.failure(.node(.internal(reason))), to: route, namesNode: namesNode) { send([error]) }
    }

    /// The message that answers on `route`, nil when the command asked for no reply or for one
    /// where a node's own messages go (its status, say), which would mislead their readers.
    private func replyMessage(_ reply: NodeReply, to route: NodeCommand.ReplyRoute?, namesNode: Bool) -> MQTTMessage? {
        guard let route else { return nil }
        if let protection = protectedTopics.protection(of: route.topic) {
            logger.warning("reply not sent: its topic is a node's own", metadata: ["topic": "\(route.topic)", "reason": "\(protection)"])
            return nil
        }
        let node = namesNode ? nodeID : nil
        let correlationData: [UInt8]? = if case .data(let data)? = route.correlation { data } else { nil }
        let correlationID: JSONValue? = if case .payload(let id)? = route.correlation { id } else { nil }
        let payload = if case .alarms(let documents) = reply {
            listReplies.payload(documents, correlationID: correlationID, node: node)
        } else {
            reply.payload(correlationID: correlationID, node: node)
        }
        return MQTTMessage(topic: route.topic, payload: payload, qos: 1, correlationData: correlationData)
    }
}
