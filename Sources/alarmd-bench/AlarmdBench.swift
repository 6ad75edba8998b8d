import ArgumentParser
import Foundation
import Logging

/// `alarmd-bench`: runs the release alarmd (simulated hardware, its own state folder) against a
/// mosquitto it starts on 127.0.0.1, measures it with baselines taken in the same run, prints a
/// table and optionally writes JSON. GitHub issue 8; docs/performance.md has the results.
@main
struct AlarmdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarmd-bench",
        abstract: "Measure alarmd: alert precision, command round trips, throughput, button latency, idle cost, memory, start-up, engine scale.")

    @Option(help: "The alarmd executable to measure (a release build; default: next to this one).")
    var alarmd: String?

    @Flag(help: "A short form that takes about 2 minutes.")
    var quick = false

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Option(name: .customLong("idle-seconds"), help: "How long the idle cost is measured (default 60, 10 with --quick).")
    var idleSeconds: Int?

    @Option(help: "Alarms for the alert precision (default 500 over a minute, 100 with --quick).")
    var alarms: Int?

    @Option(name: .customLong("requests-per-requester"),
            help: "Requests each of the 100 requesters sends per kind and run in sections 2-3 (default 100, 20 with --quick); more makes the rate phase longer, e.g. for a profiler.")
    var requestsPerRequester: Int?

    @Option(name: .customLong("rate-runs"),
            help: "How many times section 3 measures the rate, alternating with the echo baseline; the median is reported (default 5, 3 with --quick).")
    var rateRuns: Int?

    @Option(help: "Measure only these sections, comma-separated (e.g. 3, or 1,4); 2 and 3 run together, so do 5, 6 and 7. Default: all.")
    var only: String?

    @Option(name: .customLong("swift-version"), help: "The Swift version to record (scripts/bench passes it).")
    var swiftVersion: String?

    @Option(help: "The source revision to record, e.g. `git describe --always --dirty` (scripts/bench passes it).")
    var revision: String?

    @Flag(help: .hidden)
    var runtimeFloorChild = false

    func validate() throws {
        for (name, value) in [("--idle-seconds", idleSeconds), ("--alarms", alarms), ("--requests-per-requester", requestsPerRequester), ("--rate-runs", rateRuns)] {
            if let value, value < 1 { throw ValidationError("\(name) must be at least 1, not \(value)") }
        }
        _ = try selectedSections()
    }

    /// The sections `--only` names (all of 1...8 without it).
    func selectedSections() throws -> Set<Int> {
        guard let only else { return Set(1...8) }
        let numbers = only.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !numbers.isEmpty, numbers.allSatisfy({ $0.map((1...8).contains) ?? false }) else {
            throw ValidationError("--only takes section numbers from 1 to 8, comma-separated (e.g. 3 or 1,4), not '\(only)'")
        }
        return Set(numbers.compactMap { $0 })
    }

    func run() async throws {
        if runtimeFloorChild { await Footprint.idleAsSwiftProgram() }
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
        let report = Report(mode: quick ? "quick" : "full")
        if let swiftVersion { report.setMachine("swift", swiftVersion) }
        if let revision { report.setMachine("revision", revision) }
        report.setMachine("load average at start", loadAverage())
        do {
            try await measure(executable: executable, folder: folder, report: report)
        } catch {
            Cleanup.shared.run()
            throw error
        }
        Cleanup.shared.run()
        report.setMachine("load average at end", loadAverage())
        print(report.text())
        if let json { try report.writeJSON(to: json) }
    }

    private func measure(executable: String, folder: String, report: Report) async throws {
        let sections = try selectedSections()
        func wanted(_ numbers: Int...) -> Bool { !sections.isDisjoint(with: numbers) }
        let runtimeFloor = try await ChildProcess.spawn(
            "runtime-floor", executable: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            arguments: ["--runtime-floor-child"], logPath: folder + "/runtime-floor.log")
        log("starting mosquitto and the bench's 12 MQTT connections")
        let broker = try await Broker.start(in: folder)
        let observer = try await Observer(port: broker.port)
        let echo = try BenchClient(name: "echo", port: broker.port, echoResponder: true)
        try await echo.start(subscriptions: [BenchClient.echoTopic])
        let clients = try (0..<10).map { try BenchClient(name: "requester-\($0)", port: broker.port) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients { group.addTask { try await client.start() } }
            try await group.waitForAll()
        }
        var bench = Bench(report: report, observer: observer, clients: clients, folder: folder, brokerPort: broker.port,
                          brokerPID: broker.process.pid,
                          alarmdPath: executable, runtimeFloor: runtimeFloor)

        log("starting alarmd")
        let (daemon, startup) = try await bench.startDaemon(node: "bench", stateDirectory: folder + "/state-bench")
        // Every section measures the node as it runs once start-up is over.
        let settled = try await daemon.startupMemoryReleased()
        bench.startupEmpty = startup
        bench.rssEmpty = Footprint.rss(daemon.pid, settled: settled)

        // A daemon that died would make every request wait for its timeout: skip what is left.
        func alive() throws {
            guard daemon.process.isRunning else { throw BenchError("alarmd exited; its log:\n\(daemon.process.logTail())") }
        }
        let alarmCount = alarms ?? (quick ? 100 : 500)
        if wanted(1) { await bench.phase("1 alert precision: \(alarmCount) alarms, 120 ms apart") {
            try alive()
            try await AlertPrecision(count: alarmCount, spacing: 120).run(bench, daemon: daemon)
        } }
        if wanted(2, 3) { await bench.phase("2-3 command round trips and rate") {
            try alive()
            try await RoundTrips(single: quick ? 300 : 1000, perRequester: requestsPerRequester ?? (quick ? 20 : 100),
                                 rateRuns: rateRuns ?? (quick ? 3 : 5)).run(bench, daemon: daemon)
        } }
        if wanted(4) { await bench.phase("4 button to buzzer off") {
            try alive()
            // 200: a p99 that is not simply the largest of the presses.
            try await ButtonLatency(presses: quick ? 20 : 200).run(bench, daemon: daemon)
        } }
        await daemon.stop()
        let idle = idleSeconds ?? (quick ? 10 : 60)
        if wanted(5, 6, 7) { await bench.phase("5-7 idle cost (\(idle) s), memory, start-up") {
            try await Footprint(idleSeconds: idle).run(bench)
        } }
        await withTaskGroup(of: Void.self) { group in
            for client in clients + [echo, observer.client] { group.addTask { await client.stop() } }
        }
        await runtimeFloor.stop()
    }
}

/// What every phase needs.
struct Bench {
    let report: Report
    let observer: Observer
    /// 10 requesters, for scheduling in parallel; the single-requester measurements use the first.
    /// (The 100 requesters of sections 2 and 3 are ``MQTTRequestLoad``'s.)
    let clients: [BenchClient]
    let folder: String
    let brokerPort: Int
    let brokerPID: Int32
    let alarmdPath: String
    /// The baseline for idle wake-ups: an idle Swift async program (`--runtime-floor-child`).
    let runtimeFloor: ChildProcess
    var startupEmpty: Int64?
    var rssEmpty: (mib: Double, parts: String)?

    func startDaemon(node: String, stateDirectory: String) async throws -> (Daemon, startup: Int64) {
        try await Daemon.start(executable: alarmdPath, node: node, stateDirectory: stateDirectory, brokerPort: brokerPort,
                               folder: folder, observer: observer)
    }

    /// Runs one phase; a failure is reported and the next phase still runs.
    func phase(_ name: String, _ body: () async throws -> Void) async {
        log(name)
        let start = Nanos.monotonic()
        do {
            try await body()
        } catch {
            report.note("\(name): not measured: \(error)")
            log("\(name) failed: \(error)")
        }
        log(String(format: "  done in %.1f s", Double(Nanos.monotonic() - start) / 1e9))
    }
}

/// The 1, 5 and 15 minute load averages: how busy the (shared) machine was.
func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
}

/// Progress, on standard error (the results go to standard output).
func log(_ text: String) {
    FileHandle.standardError.write(Data("alarmd-bench: \(text)\n".utf8))
}
