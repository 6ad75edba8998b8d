import AlarmKit
import AlarmNode
import ArgumentParser
import FoundationEssentials
import Glibc
import LinuxSystem
import Logging

@main
struct Alarmd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarmd",
        abstract: "The alarm node: schedules alarms and timers, drives the buzzer, buttons and LED, and mirrors its state to MQTT.",
        version: AlarmdVersion.current,
        subcommands: [Run.self, CheckConfig.self, ResetAuthorization.self],
        defaultSubcommand: Run.self)
}

/// Options shared by the commands that read a configuration.
struct ConfigurationOptions: ParsableArguments {
    @Option(help: "The TOML configuration file (default: /etc/alarmd/alarmd.toml when it exists).")
    var config: String?

    @Option(help: "The broker as HOST:PORT or mqtt://HOST:PORT (overrides broker.host and broker.port).")
    var broker: String?

    @Option(help: "The node id, [A-Za-z0-9_-] (overrides node.id).")
    var node: String?

    @Option(name: .customLong("broker-protocol"), help: "auto, 5 or 3.1.1 (overrides broker.protocol).")
    var brokerProtocol: String?

    @Option(name: .customLong("group"), help: "A group the node belongs to, [A-Za-z0-9_-]; repeat for several (overrides node.groups).")
    var groups: [String] = []

    @Option(name: .customLong("state-dir"), help: "The folder of the node's state files (overrides node.state-directory).")
    var stateDirectory: String?

    @Flag(name: .customLong("simulate-hardware"), help: "Use the simulated buzzer, buttons and LED (overrides hardware.mode).")
    var simulateHardware = false

    @Option(name: .customLong("time-zone"), help: "An IANA time zone such as Europe/Berlin (overrides node.time-zone).")
    var timeZone: String?

    @Option(name: .customLong("max-alarms"), help: "The most alarms the node holds (overrides limits.max-alarms).")
    var maxAlarms: Int?

    static let defaultConfigurationPath = "/etc/alarmd/alarmd.toml"

    /// The file to read: `--config`, or the default one when it exists.
    var path: String? { config ?? (FileManager.default.fileExists(atPath: Self.defaultConfigurationPath) ? Self.defaultConfigurationPath : nil) }
    /// The copy of the file alarmd last started with, in the state folder the command line names (or the default one).
    var lastStartedPath: String { StateStore.lastStartedConfigurationPath(in: stateDirectory ?? NodeConfiguration().node.stateDirectory) }

    /// The configuration file's settings (or `file`'s; with no file, those in force), and those with the command line's over them.
    func read(file: String? = nil) throws -> (file: NodeConfiguration, inForce: NodeConfiguration) {
        let fileSettings = try (file ?? path).map(ConfigurationReader.read(path:))
        var configuration = fileSettings ?? NodeConfiguration()
        if let broker {
            // The same reading as alarmctl's and AlarmManager's: HOST, HOST:PORT or [IPv6]:PORT.
            guard let (host, port) = RemoteNodeSettings.parseBroker(broker) else {
                throw ValidationError(RemoteNodeSettings.malformedBrokerMessage(broker, source: "--broker"))
            }
            (configuration.broker.host, configuration.broker.port) = (host, port)
        }
        if let node {
            guard NodeTopics.isValidNodeID(node) else { throw ValidationError("--node may only hold letters, digits, '_' and '-' (at most 64)") }
            configuration.node.id = node
        }
        if let brokerProtocol {
            guard let setting = RemoteNodeSettings.BrokerProtocol(rawValue: brokerProtocol) else {
                throw ValidationError("--broker-protocol takes \(RemoteNodeSettings.BrokerProtocol.choices)")
            }
            configuration.broker.protocolSetting = setting
        }
        if !groups.isEmpty {
            if let bad = groups.first(where: { !NodeTopics.isValidNodeID($0) }) {
                throw ValidationError("--group '\(bad)' may only hold letters, digits, '_' and '-' (at most 64)")
            }
            configuration.node.groups = groups.reduce(into: []) { kept, group in if !kept.contains(group) { kept.append(group) } }
        }
        if let stateDirectory { configuration.node.stateDirectory = stateDirectory }
        if simulateHardware { configuration.hardware.mode = .simulated }
        if let timeZone {
            guard namedTimeZone(timeZone) != nil else {
                throw ValidationError("--time-zone: \(NodeConfiguration.unusableTimeZoneReason(timeZone))")
            }
            configuration.node.timeZone = timeZone
        }
        if let maxAlarms {
            guard NodeConfiguration.Limits.maxAlarmsRange.contains(maxAlarms) else {
                throw ValidationError("--max-alarms must be from 1 to 100000, as limits.max-alarms")
            }
            configuration.limits.maxAlarms = maxAlarms
        }
        return (fileSettings ?? configuration, configuration)
    }
}

extension Alarmd {
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the node (the default command).")

        @OptionGroup var options: ConfigurationOptions

        @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
        var logLevel: Logger.Level = .info

        func run() async throws {
            let level = logLevel
            // Under systemd, to the journal with each metadata key as a field; else to stderr.
            LoggingSystem.bootstrap { label in
                var handler: any LogHandler = JournalLogHandler(label: label, identifier: "alarmd") ?? TerminalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            let logger = Logger(label: "alarmd")
            let options = self.options
            var configuration: NodeConfiguration, problem: String?
            let lastStarted = try? options.read(file: options.lastStartedPath).inForce
            do {
                configuration = try options.read().inForce
            } catch let error as ConfigurationError where lastStarted != nil {
                // An alarm clock keeps ringing: with a file it cannot use, it runs as it last started.
                let reason = AlarmDaemon.runningAsLastStarted(because: "\(error)", copy: options.lastStartedPath, logger: logger)
                (configuration, problem) = (lastStarted!, reason)
            } catch where error is ConfigurationError || error is ValidationError {
                // A bad override on the command line is a configuration error too: exit 2, which
                // the systemd unit does not restart (RestartPreventExitStatus=2).
                logger.critical("configuration invalid", metadata: ["problems": "\(error)"])
                throw ExitCode(2)
            }
            do {
                try await AlarmDaemon.run(configuration: configuration, file: problem == nil ? options.path : nil, problem: problem,
                                          lastStarted: problem == nil ? lastStarted : nil, reload: { try options.read() }, logger: logger)
            } catch let error as StartupError {
                logger.critical("cannot start", metadata: ["reason": "\(error.message)"])
                throw ExitCode(1)
            }
        }
    }

    struct CheckConfig: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check-config",
            abstract: "Validate a configuration file and explain each problem.")

        @Argument(help: "The TOML configuration file.")
        var file: String

        func run() throws {
            let configuration: NodeConfiguration
            do { configuration = try ConfigurationReader.read(path: file) } catch { fail("\(error)", status: 2) }
            let hardware = HardwareParts.check(configuration.hardware, logger: Logger(label: "alarmd"))
            if hardware.refused { fail("\(file): hardware: \(hardware.report)", status: 2) }
            print("\(file) is valid: node \(configuration.node.id), broker \(configuration.broker.host):\(configuration.broker.port), "
                + "topics \(configuration.topics.base)/…, groups \(configuration.node.groups.isEmpty ? "none" : configuration.node.groups.joined(separator: ", "))")
            print("hardware (\(configuration.hardware.mode.rawValue)): \(hardware.report)")
            if let problem = configuration.hardware.timingProblem { print("warning: \(problem)") }
            let allowed = ["\(configuration.topics.base)/intents/#"] + configuration.intents.allow
            print("intents may publish to: \(allowed.joined(separator: ", ")) (never a node's cmd/, sim/, ha/, status, alarms/ or events)")
        }
    }

    struct ResetAuthorization: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-authorization",
            abstract: "Forget the authorization decision, so the node asks again (stop alarmd first).")

        @OptionGroup var options: ConfigurationOptions

        func run() throws {
            let directory = try options.read().inForce.node.stateDirectory
            // Written by root, the file would be root's and unreadable to the daemon's user, which
            // would keep it aside and start with no alarms.
            var folder = stat()
            if geteuid() == 0, stat(directory, &folder) == 0, folder.st_uid != 0 {
                fail("alarmd reset-authorization: \(directory) belongs to another user than root: run this as that user, e.g. sudo -u alarmd alarmd reset-authorization --config /etc/alarmd/alarmd.toml", status: 1)
            }
            let store = StateStore(directory: directory, logger: Logger(label: "alarmd"))
            guard store.holdsState else {
                fail("alarmd reset-authorization: no node state in \(directory) (no alarms folder), so nothing to reset: name the node's state folder with --state-dir, or the node's configuration with --config", status: 1)
            }
            let loaded = try store.load()
            if let problem = loaded.problem {
                // Writing an empty state now would look like success while every alarm is gone.
                fail("alarmd reset-authorization: nothing was reset: \(problem). Mend the file kept aside and move it back, or start alarmd to go on without it",
                     status: 1)
            }
            var state = loaded.state
            state.authorization = .notDetermined
            try store.save(state)
            print("authorization reset in \(store.nodePath); start alarmd (with authorization = \"prompt\") and it will ask again")
        }
    }
}

/// Writes `message` on standard error and exits with `status`.
private func fail(_ message: String, status: Int32) -> Never {
    StandardStream.error.write("\(message)\n")
    Glibc.exit(status)
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
