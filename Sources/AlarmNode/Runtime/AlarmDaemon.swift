import AlarmHardware
import AlarmKit
import FoundationEssentials
import LinuxSystem
import Logging
import Mosquitto
import ServiceLifecycle
import UnixSignals

/// Why the daemon could not start: the message says what to fix.
public struct StartupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The daemon, wired: the node, its state file, MQTT, the hardware and the services that run
/// them. `run` is the one place where the parts are put together.
public enum AlarmDaemon {
    /// Puts the parts together, then runs until SIGTERM or SIGINT and shuts down gracefully:
    /// offline status published, buzzer and LED off. Throws ``StartupError`` when a part cannot
    /// be made (nothing runs then).
    /// - Parameters:
    ///   - file: the configuration file, copied into the state folder once the hardware and the MQTT
    ///     client are made: a later start whose file is unusable, or cannot start, runs with that copy.
    ///   - problem: why `configuration` is not the file's (the copy runs), for the status.
    ///   - lastStarted: the copy, to run with when the hardware or the MQTT client cannot be made.
    ///   - reload: reads the configuration again (on SIGHUP): the file's, and with the command line's flags over it.
    public static func run(
        configuration requested: NodeConfiguration, file: String? = nil, problem requestedProblem: String? = nil,
        lastStarted: NodeConfiguration? = nil,
        reload: @escaping @Sendable () throws -> (file: NodeConfiguration, inForce: NodeConfiguration), logger: Logger
    ) async throws {
        let store = StateStore(directory: requested.node.stateDirectory, logger: logger)
        let loaded = try store.load()
        let started = Date()
        let made: (configuration: NodeConfiguration, problem: String?, parts: Parts)
        do throws(StartupError) {
            made = (requested, requestedProblem, try makeParts(requested, onlineSince: started, logger: logger))
        } catch {
            guard let lastStarted, lastStarted != requested, lastStarted.node.stateDirectory == requested.node.stateDirectory else { throw error }
            // A file that reads but cannot start (a GPIO line that the chip lacks, say), as one with a typo.
            let reason = runningAsLastStarted(because: error.message, copy: StateStore.lastStartedConfigurationPath(in: store.directory), logger: logger)
            made = (lastStarted, reason, try makeParts(lastStarted, onlineSince: started, logger: logger))
        }
        let (configuration, problem, (hardwareParts, client)) = made
        if problem == nil, let text = file.flatMap(FileManager.default.contents(atPath:)) {
            try? AtomicFile.write(Array(text), to: StateStore.lastStartedConfigurationPath(in: store.directory))
        }
        let timeZoneSource = TimeZoneSource(configured: configuration.node.timeZone)
        guard let timeZone = TimeZone(identifier: timeZoneSource.currentZone) else {
            throw StartupError("the time zone \(NodeConfiguration.unusableTimeZoneReason(timeZoneSource.currentZone)): set node.time-zone or --time-zone to an IANA zone such as Europe/Berlin")
        }

        var state = loaded.state
        if configuration.node.authorization == .authorized { state.authorization = .authorized }
        for alarm in state.alarms {
            for refused in configuration.intentTopics.refusals(in: alarm.configuration) {
                logger.warning("restored alarm has an intent whose topic is no longer allowed: it will ring but not run that intent", metadata: [
                    "alarmID": "\(alarm.id)", "field": "\(refused.field)", "reason": "\(refused.reason)"])
            }
            if let group = alarm.group, !configuration.node.groups.contains(group) {
                logger.warning("restored alarm came through a group this node no longer joins: cancel it on this node (alarmctl --node), or join the group again",
                               metadata: ["alarmID": "\(alarm.id)", "group": "\(group)"])
            }
        }

        let effects = NodeEffects(store: store)
        let clockSynchronized = (try? ClockSynchronization.isSynchronized()) ?? false
        let node = LocalAlarmNode(configuration: configuration.engineConfiguration(timeZone: timeZone), state: state,
                                  clock: SystemAlarmClock(sleepingOn: TimerFDClock()), clockTrusted: clockSynchronized, authorizationPrompt: effects,
                                  delegate: effects, logger: logger)

        let status = NodeStatus(
            state: "online", version: AlarmdVersion.current, since: started, timeZone: timeZoneSource.currentZone,
            clockSynchronized: clockSynchronized,
            authorization: state.authorization, alarms: state.alarms.count, stateFileProblem: loaded.statusProblem,
            authorizationPrompt: configuration.hardware.promptDuration,
            groups: configuration.node.groups.isEmpty ? nil : configuration.node.groups, configurationProblem: problem)
        let simulation = hardwareParts.simulation
        let bridge = MQTTBridge(client: client, configuration: configuration, node: node, status: status,
                                knownAlarms: Set(state.alarms.map(\.id)), damagedAlarms: loaded.damagedAlarms, simulation: simulation, logger: logger)
        // The simulated hardware says on the terminal what a person would notice, once per change.
        var printShown: (@Sendable (HardwareShown) -> Void)?
        if simulation != nil {
            printShown = { shown in StandardStream.output.write("[simulated hardware] \(shown.description)\n") }
        }
        let hardware = NodeHardware(parts: hardwareParts.parts, node: node, configuration: configuration.hardware,
                                    publishEvent: { bridge.publish(event: $0) }, onShownChange: printShown, logger: logger)
        effects.attach(bridge: bridge, hardware: hardware)
        if let simulation { SimulationDisplay.start(simulation, bridge: bridge, topics: configuration.topics) }

        // Graceful shutdown runs from the last service to the first, each once the one after it
        // has returned: systemd hears STOPPING=1, the hardware goes off (and the simulation shows
        // it), then the bridge publishes offline, then the timer stops.
        let services: [any Service] = [
            NodeTimerService(node: node),
            StateRetryService(node: node),
            HeapReleaseService(bursts: bridge.sendingBursts, messagesSent: { bridge.messagesSent }),
            TimeKeeperService(node: node, bridge: bridge, timeZone: timeZoneSource, logger: logger),
            bridge,
            ConfigurationReloadService(hangups: await UnixSignalsSequence(trapping: .sighup), reload: reload,
                                       running: configuration, timeZone: timeZoneSource, node: node, bridge: bridge, logger: logger),
            hardware,
            ServiceNotifierService(notifier: ServiceNotifier(), nodeAnswers: { _ = await node.withEngine { _ in true } }, logger: logger),
        ]

        logger.info("alarmd starting", metadata: [
            "node": "\(configuration.node.id)", "broker": "\(configuration.broker.host):\(configuration.broker.port)",
            "stateDirectory": "\(configuration.node.stateDirectory)", "hardware": "\(simulation == nil ? "gpio" : "simulated")",
            "topics": "\(configuration.topics.base)", "groups": "\(configuration.node.groups.joined(separator: ","))",
        ])
        try await ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
        logger.info("alarmd stopped")
    }

    /// Logs that alarmd runs with the configuration it last started with (`copy`), because of
    /// `reason`, and returns the status's `configurationProblem` for it.
    public static func runningAsLastStarted(because reason: String, copy: String, logger: Logger) -> String {
        logger.critical("configuration unusable; running with the one alarmd last started with", metadata: ["problems": "\(reason)", "running": "\(copy)"])
        return "\(reason)\nalarmd runs with the configuration it last started with (\(copy)) until the file is fixed and alarmd restarted"
    }

    /// The parts a configuration names that it may fail to make: the hardware and the MQTT client.
    private typealias Parts = (hardware: (parts: NodeHardware.Parts, simulation: HardwareParts.Simulation?), client: MQTTClient)

    private static func makeParts(_ configuration: NodeConfiguration, onlineSince: Date, logger: Logger) throws(StartupError) -> Parts {
        let hardware = try HardwareParts.make(configuration.hardware, logger: logger)
        let groups = configuration.node.groups.isEmpty ? nil : configuration.node.groups
        do {
            return (hardware, try MQTTClient(configuration: try mqttConfiguration(configuration, onlineSince: onlineSince, groups: groups), logger: logger))
        } catch { throw StartupError("cannot set up the MQTT client: \(error)") }
    }

    private static func mqttConfiguration(_ configuration: NodeConfiguration, onlineSince: Date, groups: [String]?) throws(StartupError) -> MQTTConfiguration {
        let broker = configuration.broker
        var password = broker.password
        if let file = broker.passwordFile {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw StartupError("cannot read broker.password-file \(file): check that alarmd's user may read it")
            }
            password = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        let tls = broker.tls ? MQTTConfiguration.TLS(caFile: broker.caFile, certFile: broker.certFile,
                                                     keyFile: broker.keyFile, insecure: broker.tlsInsecure) : nil
        return MQTTConfiguration(
            host: broker.host, port: broker.port, clientID: broker.clientID ?? "alarmd-\(configuration.node.id)",
            username: broker.username, password: password, tls: tls, keepAlive: broker.keepAlive,
            protocolSetting: broker.protocolSetting,
            // Retained on the status topic: `{"state":"offline","lastOnline":…}`, with the node's
            // groups (a requester still counts it among the members).
            will: MQTTConfiguration.Will(topic: configuration.topics.status,
                                         payload: MQTTBridge.encode(NodeStatus.will(lastOnline: onlineSince, groups: groups))),
            birthTopic: configuration.topics.status, outgoingBufferLimit: broker.outgoingBufferLimit)
    }
}
