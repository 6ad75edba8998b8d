import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

@main
struct Alarmctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarmctl",
        abstract: "Schedule, list, watch and control the alarms of an alarmd node over MQTT.",
        discussion: """
            Examples:
              alarmctl timer 10m --title Tea
              alarmctl alarm 07:00 mon,wed,fri --title "Wake up" --snooze 9m
              alarmctl alarm 2026-12-24T18:00 --title Presents
              alarmctl list
              alarmctl snooze 2F1E            (an id prefix is enough)
              alarmctl stop --all
              alarmctl watch
              alarmctl preview "07:00 weekdays" --count 5 --time-zone Europe/Berlin
              alarmctl --group house timer 1m  (every member of group house; each one answers)

            The node: --broker HOST:PORT and --node ID, or ALARMD_BROKER and ALARMD_NODE
            (default localhost:1883 and this host's name). Every command takes --json.

            Exit statuses: 0 ok, 1 the node refused, 2 bad command line, 3 broker or node
            unreachable (or offline), 4 no such alarm or ambiguous id, 5 not authorized,
            6 standard output cannot be written.
            More in docs/alarmctl.md (/usr/share/doc/alarmd/docs/ when installed from the
            package). Shell completion:
              alarmctl --generate-completion-script bash|zsh|fish
            """,
        version: AlarmdVersion.current,
        subcommands: [
            Timer.self, AlarmCommand.self, List.self, Show.self,
            Stop.self, Snooze.self, Pause.self, Resume.self, Cancel.self,
            Watch.self, Preview.self, Status.self, Authorize.self,
        ])

    /// Runs the command line; usage errors exit with 2 (ArgumentParser's own would be 64).
    static func main() async {
        // A reader that goes away (`alarmctl watch | head -2`) is met as EPIPE by Terminal.write,
        // which exits quietly, instead of SIGPIPE, whose handling would depend on the libraries loaded.
        signal(SIGPIPE, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        let words = arguments.prefix { $0 != "--" }
        do {
            // ArgumentParser would call a mistyped command an "unexpected argument", and options
            // without a command (`alarmctl --group house`) unknown options.
            let commands = configuration.subcommands.map { $0._commandName }, word = LeadingOptions.subcommand(arguments)
            if let word, word != "help", !commands.contains(word) {
                throw ValidationError("'\(word)' is not a command: use one of \(commands.joined(separator: ", "))")
            } else if word == nil, !arguments.isEmpty, !arguments.contains(where: { ["-h", "--help", "--version"].contains($0) || $0.hasPrefix("--generate-") }) {
                throw ValidationError("no command after '\(arguments.joined(separator: " "))': add one of \(commands.joined(separator: ", "))")
            }
            // ArgumentParser would read `timer -5m` as options, then say the duration is missing.
            if let index = words.firstIndex(where: { $0.count > 1 && $0.hasPrefix("-") && $0.dropFirst().first!.isNumber }) {
                let negative = words[index], option = index > 0 ? words[index - 1] : ""
                let ranges = ["--timeout": "give seconds from 0.1 to 600", "--count": "list 1 to 1000 dates",
                              "--snooze": "give a duration from 1s to 7d", "--pre-alert": "give a duration from 1s to 7d"]
                if let range = ranges[option] { throw ValidationError("\(option) \(negative) is negative: \(range)") }
                throw ValidationError("'\(negative)' is negative: durations and times count forward (a timer from 1s to 7 days); a title that begins with '-' is written --title=\(negative)")
            }
            var command = try parseAsRoot(LeadingOptions.movedBehindSubcommand(arguments))
            if var asyncCommand = command as? any AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            if exitCode(for: error) == .validationFailure {
                // A command line that cannot be read still honours --json (before any `--`).
                OutputOptions.report(.usage(message(for: error)), json: words.contains("--json"), text: fullMessage(for: error))
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            exit(withError: error)
        }
    }
}

/// `--json`, which every command takes.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (docs/mqtt.md documents, ISO 8601 UTC times) instead of text.")
    var json = false

    /// Prints `text`, or `value` as JSON with `--json`: as it is, as `watch --json` does (JSON escapes the ESC, a title's DEL stays).
    func print(_ text: @autoclosure () -> String, json value: @autoclosure () -> some Encodable) {
        if json { Terminal.write(JSONOutput.pretty(value()) + "\n") } else { Terminal.print(text()) }
    }

    /// Runs a command's body; its error is printed (to standard error, and as JSON on standard
    /// output with `--json`) and becomes the exit status. A command may also fail after its output:
    /// `body` returns what went wrong (on a `--group`, or a node offline or not authorized), which
    /// then ends the command with its exit status, said on standard error.
    func run(_ body: () async throws(AlarmctlError) -> AlarmctlError?) async throws {
        do {
            guard let failure = try await body() else { return }
            Terminal.printError("alarmctl: \(failure.message)")
            throw ExitCode(failure.exitStatus.rawValue)
        } catch let error as AlarmctlError {
            Self.report(error, json: json, text: "alarmctl: \(error.message)")
            throw ExitCode(error.exitStatus.rawValue)
        }
    }

    /// Reports a failed command: `text` on standard error, and with `json` the error as JSON on standard output.
    static func report(_ error: AlarmctlError, json: Bool, text: String) {
        if json { Terminal.write(JSONOutput.pretty(JSONOutput.failure(error)) + "\n") }
        Terminal.printError(text)
    }
}

/// Where the node is: options over the environment variables.
struct ConnectionOptions: ParsableArguments {
    @OptionGroup var brokerOptions: BrokerOptions

    @Option(help: ArgumentHelp("The node id (default: ALARMD_NODE, or this host's name).", valueName: "id"))
    var node: String?

    @Option(help: ArgumentHelp("Send to every member of this group (node.groups) and print each member's answer.", valueName: "name"))
    var group: String?

    @Option(help: ArgumentHelp("Seconds to wait for the node's answer (default: 5).", valueName: "seconds"))
    var timeout: Double?

    @Flag(help: "Write the MQTT client's log to standard error.")
    var verbose = false

    /// Runs `body` with the group of `--group`, and disconnects afterwards. Replies are collected
    /// for `--timeout` at most (5 s by default), less once every online member has answered.
    func withGroup<Value>(_ name: String, _ body: (RemoteGroup) async throws(AlarmctlError) -> Value) async throws(AlarmctlError) -> Value {
        guard NodeTopics.isValidNodeID(name) else {
            throw .usage("--group '\(name)' is not a group name: use letters, digits, '_' and '-' (at most 64)")
        }
        if let node { throw .usage("--group and --node '\(node)' exclude each other: a group's command goes to every member") }
        let settings = try brokerOptions.settings(node: node, timeout: timeout, environment: ProcessInfo.processInfo.environment)
        return try await closing(RemoteGroup.forAlarmctl(name, settings: settings, verbose: verbose), body) { await $0.close() }
    }

    /// Runs `body` with a session to the node, and disconnects afterwards.
    func withSession<Value>(_ body: (NodeSession) async throws(AlarmctlError) -> Value) async throws(AlarmctlError) -> Value {
        // The commands that take --group have gone to the group before they get here.
        if group != nil {
            throw .usage("--group works with timer, alarm, list, stop, snooze, pause, resume and cancel; this command talks to one node: use --node")
        }
        let settings = try brokerOptions.settings(node: node, timeout: timeout, environment: ProcessInfo.processInfo.environment)
        return try await closing(NodeSession(settings: settings, verbose: verbose), body) { await $0.close() }
    }

    /// Runs `body` with `connection`, then closes it, also when `body` throws.
    private func closing<Connection, Value>(
        _ connection: Connection, _ body: (Connection) async throws(AlarmctlError) -> Value, close: (Connection) async -> Void
    ) async throws(AlarmctlError) -> Value {
        let outcome: Result<Value, AlarmctlError>
        do { outcome = .success(try await body(connection)) } catch { outcome = .failure(error) }
        await close(connection)
        return try outcome.get()
    }
}
