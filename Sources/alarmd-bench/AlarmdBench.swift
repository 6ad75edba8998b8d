import ArgumentParser
import Foundation
import Logging

/// `alarmd-bench`: measures the release alarmd as a black box, through its MQTT contract, against
/// the budgets of docs/performance.md, each beside a baseline measured in the same run, and a plain Python node
/// on the command rows. It starts its own mosquitto on 127.0.0.1 and removes everything it made.
@main
struct AlarmdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarmd-bench",
        abstract: "Measure alarmd against the budgets of docs/performance.md, each beside a baseline of the same run.")

    @Option(help: "The alarmd executable to measure (a release build; default: next to this one).")
    var alarmd: String?

    @Flag(help: "A short run: fewer samples, 30 s of idle (about 1.5 minutes instead of 5.5).")
    var quick = false

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Option(help: "A Python with paho-mqtt 2 for the plain Python baseline (scripts/bench makes one); without it those rows say SKIPPED.")
    var python: String?

    @Option(name: .customLong("python-node"), help: "The plain Python node's script (default: scripts/bench-python-node.py).")
    var pythonNode = "scripts/bench-python-node.py"

    @Option(help: "The systemd unit whose Environment= lines alarmd runs with, as when installed.")
    var unit = "deploy/alarmd.service"

    @Option(name: .customLong("swift-version"), help: "The Swift version to record (scripts/bench passes it).")
    var swiftVersion: String?

    @Option(help: "The source revision to record (scripts/bench passes `git describe --always --dirty`).")
    var revision: String?

    @Flag(help: .hidden)
    var idleChild = false

    func run() async throws {
        if idleChild { await idleSwiftProgram() }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let executable = alarmd ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("alarmd").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ValidationError("no alarmd at \(executable): build it (swift build -c release --product alarmd) or pass --alarmd")
        }
        Cleanup.installSignalHandlers()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alarmd-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        Cleanup.shared.register(folder: folder)
        var machine = ["swift": swiftVersion ?? "unknown", "revision": revision ?? "unknown"]
        machine["alarmd"] = executable
        let report = Report(mode: quick ? "quick" : "full", machine: machine)
        do {
            let python = self.python.map { (executable: $0, script: pythonNode) }
            try await Bench(report: report, quick: quick, folder: folder, alarmdPath: executable, python: python, unit: unit).run()
        } catch {
            Cleanup.shared.run()
            throw error
        }
        Cleanup.shared.run()
        print(report.text())
        if let json { try report.writeJSON(to: json) }
    }
}

/// The baseline of idle wake-ups (`alarmd-bench --idle-child`): a Swift program that has used the
/// concurrency runtime once, as every async program does, and then awaits nothing forever. Its
/// wake-ups are libdispatch's (the worker pool's monitor, about once a second).
func idleSwiftProgram() async -> Never {
    await Task.detached { try? await Task.sleep(for: .milliseconds(1)) }.value
    while true { pause() }
}

/// The alarmd under test: the release binary in simulation mode, UTC, its own state folder.
struct Daemon {
    let process: ChildProcess
    let stateDirectory: String
    static let base = "alarmd/bench"
    var pid: Int32 { process.pid }
    static func topic(_ suffix: String) -> String { "\(base)/\(suffix)" }
    static func command(_ operation: String) -> String { "\(base)/cmd/\(operation)" }
}

/// Progress, on standard error (the table goes to standard output).
func log(_ text: String) {
    FileHandle.standardError.write(Data("alarmd-bench: \(text)\n".utf8))
}
