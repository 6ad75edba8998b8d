import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

extension Alarmctl {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the node's alarms.",
            discussion: """
                Columns: short id, kind (timer, alarm, date), title, state, what comes next
                (time left, or the next alert in the node's time zone), repeats.
                With --json: an array of the alarm documents of docs/mqtt.md.
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                if let group = connection.group {
                    return try await connection.onGroup(group, output: output) { group throws(AlarmNodeError) in [(nil, try await group.list())] }
                }
                try await connection.withSession { session throws(AlarmctlError) in
                    let documents = try await session.documents()
                    let now = Date()
                    // Fitted to a terminal's width; whole when output goes to a pipe or a file.
                    let table = documents.isEmpty
                        ? "no alarms on node \(session.settings.node)"
                        : Rendering.table(documents, now: now, timeZone: session.displayTimeZone, width: Terminal.isInteractive ? Terminal.columns : nil)
                    output.print(table, json: Rendering.displayOrder(documents, now: now))
                    for warning in Rendering.listWarnings(documents, status: session.connection.statusUpdates.value, now: now) {
                        Terminal.printError("alarmctl: warning: \(warning)")
                    }
                }
                return nil
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one alarm in full.",
            discussion: "Example: alarmctl show 2F1E   (the id, or its first characters)")

        @Argument(help: ArgumentHelp("The alarm's id, a unique prefix of it, or its title when no other alarm has it.", valueName: "id-or-title"))
        var id: String

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                try await connection.withSession { session throws(AlarmctlError) in
                    let document = try AlarmSelection.resolve(id, among: try await session.documents())
                    output.print(Rendering.details(document, now: Date(), timeZone: session.displayTimeZone), json: document)
                }
                return nil
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the node's status: online, time zone, clock, authorization.",
            discussion: "Exits with 3 when the node is offline.")

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                let (status, offline) = try await connection.withSession { session throws(AlarmctlError) in
                    let status = try await session.status()
                    return (status, status.isOnline ? nil : session.offlineError(status))
                }
                var lines = [("state", status.stateDescription)]
                if let version = status.version { lines.append(("version", version)) }
                if let timeZone = status.timeZone { lines.append(("time zone", timeZone)) }
                if let synchronized = status.clockSynchronized { lines.append(("clock", synchronized ? "synchronized" : "NOT synchronized")) }
                if let authorization = status.authorization { lines.append(("authorization", authorization.rawValue)) }
                if let alarms = status.alarms { lines.append(("alarms", "\(alarms)")) }
                if let groups = status.groups, !groups.isEmpty { lines.append(("groups", groups.joined(separator: ", "))) }
                if let problem = status.configurationProblem { lines.append(("configuration", problem)) }
                if let problem = status.stateFileProblem { lines.append(("state file", problem)) }
                output.print(Rendering.labelled(lines), json: status)
                return offline
            }
        }
    }

    struct Authorize: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the node to authorize scheduling; press its stop button to agree.",
            discussion: """
                The node chirps and blinks for its hardware.prompt-duration (30 seconds by default):
                its stop button authorizes, its snooze button denies. Exits with 0 when authorized,
                5 otherwise.
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                let decision = try await connection.withSession { session throws(AlarmctlError) in try await session.requestAuthorization() }
                output.print("authorization: \(decision.rawValue)", json: ["authorization": decision.rawValue])
                return decision == .authorized ? nil
                    : .unauthorized("the node is not authorized (\(decision.rawValue)): " + AlarmctlError.authorizationAdvice(decision))
            }
        }
    }
}

/// The ids an operation applies to: some, or `--all`.
struct OperationTarget: ParsableArguments {
    @Argument(help: ArgumentHelp("Alarm ids, unique prefixes of them, or unique titles.", valueName: "id-or-title"))
    var ids: [String] = []

    @Flag(help: "Every alarm the operation applies to (e.g. every alerting alarm for stop).")
    var all = false

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if all && !ids.isEmpty { throw ValidationError("give alarm ids or --all, not both") }
        if !all && ids.isEmpty { throw ValidationError("give an alarm id (or a prefix of it), or --all; `alarmctl list` shows them") }
    }

    /// The configuration of the command `name` that runs an operation, with its examples.
    static func command(_ name: String, _ abstract: String, ids: String = "2F1E") -> CommandConfiguration {
        CommandConfiguration(abstract: abstract, discussion: "Examples: alarmctl \(name) \(ids)   alarmctl \(name) --all")
    }

    /// Runs `operation` on each target alarm, reporting each outcome; the exit status is the first failure's.
    func run(_ operation: AlarmOperation, done verb: String) async throws {
        if let group = connection.group { return try await runOnGroup(group, operation) }
        var firstFailure: AlarmctlError?
        try await output.run { () async throws(AlarmctlError) in
            try await connection.withSession { session throws(AlarmctlError) in
                let documents = try await session.documents()
                let targets = all
                    ? AlarmSelection.all(for: operation, among: documents)
                    : try AlarmSelection.resolve(ids, among: documents)
                var results: [JSONValue] = []
                for target in targets {
                    do throws(AlarmctlError) {
                        let after = try await session.perform(operation, id: target.id)
                        results.append(JSONOutput.operationResult(id: target.id, result: .success(after)))
                        if !output.json {
                            let state = after.map { Rendering.summary($0, now: Date(), timeZone: session.displayTimeZone) }
                                ?? "\(AlarmText.kind(of: target)) \(target.id.uuidString.prefix(8)) \"\(AlarmText.title(of: target))\": removed"
                            Terminal.print("\(verb) \(state)")
                        }
                    } catch {
                        // With --all, an alarm removed or changed since the list (a button, another client) leaves nothing to do.
                        let nothingToDo = all && ["notFound", "invalidState"].contains(error.code)
                        results.append(JSONOutput.operationResult(id: target.id, result: .failure(error), nothingToDo: nothingToDo))
                        if nothingToDo {
                            let why = error.code == "notFound" ? "it was removed meanwhile" : error.message
                            if !output.json { Terminal.print("nothing to do for \(target.id.uuidString.prefix(8)): \(why)") }
                            continue
                        }
                        Terminal.printError("alarmctl: \(target.id.uuidString.prefix(8)): \(error.message)")
                        firstFailure = firstFailure ?? error
                    }
                }
                if targets.isEmpty && !output.json { Terminal.print("no alarm to \(operation == .countdown ? "snooze" : operation.rawValue)") }
                if output.json { Terminal.write(JSONOutput.pretty(results) + "\n") }
            }
            return nil
        }
        // Each failure was reported with its alarm.
        if let firstFailure { throw ExitCode(firstFailure.exitStatus.rawValue) }
    }
}

extension Alarmctl {
    struct Stop: AsyncParsableCommand {
        static let configuration = OperationTarget.command("stop", "Stop alerting alarms: a one-shot alarm is removed, a repeating one waits for its next day.")
        @OptionGroup var target: OperationTarget
        func run() async throws { try await target.run(.stop, done: "stopped") }
    }

    struct Snooze: AsyncParsableCommand {
        static let configuration = OperationTarget.command("snooze", "Snooze alerting alarms (repeat, for a timer): count down their snooze time again.")
        @OptionGroup var target: OperationTarget
        func run() async throws { try await target.run(.countdown, done: "snoozed") }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = OperationTarget.command("pause", "Pause running countdowns, keeping the time left.")
        @OptionGroup var target: OperationTarget
        func run() async throws { try await target.run(.pause, done: "paused") }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = OperationTarget.command("resume", "Resume paused countdowns.")
        @OptionGroup var target: OperationTarget
        func run() async throws { try await target.run(.resume, done: "resumed") }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = OperationTarget.command("cancel", "Remove alarms, in any state (a repeating alarm for good).", ids: "2F1E 9A0B")
        @OptionGroup var target: OperationTarget
        func run() async throws { try await target.run(.cancel, done: "cancelled") }
    }
}
