import Foundation
import Synchronization

/// One run: the processes, the bench's three MQTT connections, and the phases that fill the rows.
final class Bench {
    let report: Report
    let quick: Bool
    let folder: String
    let alarmdPath: String
    let python: (executable: String, script: String)?
    /// The environment the systemd unit gives alarmd (its `Environment=` lines), so that alarmd is
    /// measured as it runs when installed.
    let unitEnvironment: [String: String]
    private var port = 0
    private var observer: BenchClient!, requester: BenchClient!, echo: BenchClient!
    private var daemon: Daemon!
    private var idleChild: ChildProcess!
    private var pythonNode: ChildProcess?
    /// The timer paused and resumed in rows 4-5 (beside 99 fixed dates far ahead: 100 alarms).
    private var timerID = ""
    /// alarmd's memory at the end of the idle rows (kB by smaps_rollup field).
    private var afterUse: [String: Int64] = [:]

    init(report: Report, quick: Bool, folder: String, alarmdPath: String, python: (executable: String, script: String)?,
         unit: String) throws {
        (self.report, self.quick, self.folder, self.alarmdPath, self.python) = (report, quick, folder, alarmdPath, python)
        let lines = try String(contentsOfFile: unit, encoding: .utf8).split(separator: "\n")
        unitEnvironment = Dictionary(lines.compactMap { line -> (String, String)? in
            guard line.hasPrefix("Environment="), let equals = line.dropFirst(12).firstIndex(of: "=") else { return nil }
            return (String(line[line.index(line.startIndex, offsetBy: 12)..<equals]), String(line[line.index(after: equals)...]))
        }, uniquingKeysWith: { _, last in last })
        report.note("alarmd's environment, from \(unit): \(unitEnvironment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " "))")
    }

    func run() async throws {
        // First, so that its runtime has settled by the idle rows.
        idleChild = try await ChildProcess.spawn("idle-swift", executable: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
                                                 arguments: ["--idle-child"], logPath: folder + "/idle-swift.log")
        let broker = try await Broker.start(in: folder)
        port = broker.port
        observer = try BenchClient(name: "observer", port: port)
        requester = try BenchClient(name: "requester", port: port)
        echo = try BenchClient(name: "echo", port: port)
        try await observer.start(subscribing: ["alarmd/+/status", "alarmd/+/events", "alarmd/+/sim/outputs", "alarmd/+/sim/buttons", Self.bareTopic])
        try await requester.start()
        try await echo.start(subscribing: ["bench/echo/+"])
        log("starting alarmd")
        daemon = try await startDaemon().daemon

        await phase("1-2 alert lateness", rows: ["1", "2"]) { try await alerts() }
        await phase("3 stop press → buzzer silent", rows: ["3"]) { try await stopPresses() }
        await phase("100 alarms; 4-5, 8 list and durable changes, beside echo and the Python node", rows: ["4", "5", "8"]) {
            try await seedAlarms()
            try await startPythonNode()
            try await commands()
        }
        await phase("6-8 idle and memory", rows: ["6", "7", "8 idle"]) { try await idle() }
        await phase("9 start-up with 100 alarms", rows: ["9"]) { try await restarts() }

        for client in [observer, requester, echo] { await client?.stop() }
    }

    /// Runs one phase; a failure is reported on its rows and the next phase still runs.
    private func phase(_ name: String, rows: [String], _ body: () async throws -> Void) async {
        log(name)
        do {
            guard daemon.process.isRunning else { throw BenchError("alarmd exited; its log:\n\(daemon.process.logTail())") }
            try await body()
        } catch {
            for row in rows where !report.document.rows.contains(where: { $0.row == row }) { report.missing(row, name, "\(error)") }
            log("\(name) failed: \(error)")
        }
    }

    /// Starts alarmd on `state` and waits for its retained status to say online; returns it and the
    /// time from the spawn to that status as the bench received it.
    private func startDaemon(state: String? = nil) async throws -> (daemon: Daemon, startup: Int64) {
        let configuration = folder + "/alarmd.toml"
        // A short alert timeout: an alert the bench fails to stop cannot hide the next ones for long.
        try "[limits]\nalert-timeout = 5\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let directory = state ?? folder + "/state"
        let online = observer.expect(within: 30) { $0.topic == Daemon.topic("status") && $0.json?["state"] as? String == "online" }
        let process = try await ChildProcess.spawn(
            "alarmd", executable: alarmdPath,
            arguments: ["--config", configuration, "--broker", "127.0.0.1:\(port)", "--node", "bench", "--state-dir", directory,
                        "--simulate-hardware", "--time-zone", "UTC"],
            environment: unitEnvironment, logPath: folder + "/alarmd.log")
        do {
            let arrival = try await online.value
            return (Daemon(process: process, stateDirectory: directory), arrival.monotonic - process.spawnedAt)
        } catch {
            throw BenchError("alarmd did not come online (\(process.isRunning ? "running" : "exited")):\n\(process.logTail())")
        }
    }

    // MARK: 1-2

    /// Batches of 100 one-shot alarms 120 ms apart (100 is the default limit of alarms), each
    /// stopped as soon as its `alerting` event arrives, so that each alerts alone;
    /// `clock_nanosleep` to instants halfway between them meanwhile, publishing each instant
    /// through the broker as it wakes (``BarePublisher``).
    private func alerts() async throws {
        var lineSet: [Int64] = [], received: [Int64] = [], sleeps: [Int64] = [], bare: [Int64] = [], counted = 0, stolen: [Double] = []
        let publisher = try BarePublisher(port: port, topic: Self.bareTopic)
        for _ in 0..<(quick ? 1 : 3) {
            let batch = try await alertBatch(count: 100, spacing: 120, publisher: publisher)
            (lineSet, received, sleeps, bare, counted) = (lineSet + batch.lineSet, received + batch.received, sleeps + batch.sleeps,
                                                          bare + batch.bare, counted + batch.counted)
            stolen.append(batch.steal)
            try await waitUntilEmpty()
        }
        let line = Stats(lineSet), event = Stats(received), baseline = Stats(sleeps), floor = Stats(bare), steal = stolen.reduce(0, +) / Double(stolen.count)
        let sleep = "nanosleep \(ms(baseline.p50)) / \(ms(baseline.p99))"
        let note = "\(counted) alarms 120 ms apart; \(counted - lineSet.count) buzzer-on and \(counted - received.count) events missing"
        report.latency("1", "alert lateness: buzzer line set (sim/outputs realtime − due)", line, baseline: sleep,
                       budget: "p99 ≤ 1 ms and ≤ 3× nanosleep p99 (\(ms(min(1, 3 * baseline.p99))))",
                       limit: lineSet.count == counted ? min(1, 3 * baseline.p99) : -1, steal: steal, note: note)
        report.latency("2", "alerting event received − due", event, baseline: "\(sleep); bare publish \(ms(floor.p50)) / \(ms(floor.p99))", budget: "p99 ≤ 2 ms",
                       limit: received.count == counted ? 2 : -1, steal: steal)
    }

    /// The topic of the bare publisher's messages, which the observer receives as it does events.
    static let bareTopic = "bench/bare"

    /// One batch: the lateness of the buzzer line and of the events received, in ns, for the
    /// alarms due after scheduling ended, and the baselines': the sleeps' and their messages'.
    private func alertBatch(count: Int, spacing: Int64, publisher: BarePublisher)
        async throws -> (lineSet: [Int64], received: [Int64], sleeps: [Int64], bare: [Int64], counted: Int, steal: Double) {
        let first = (Nanos.realtime() / 1_000_000 + 2000 + Int64(count) * 15) / 1000 * 1000 + 1000
        let instants = (0..<count).map { first + Int64($0) * spacing }
        let ids = instants.map { _ in UUID().uuidString }
        let seen = Locked((received: [String: Int64](), lineSet: [Int64](), buzzer: false, bare: [Int64]()))
        let observer = observer!
        let watcher = observer.watch { arrival in
            if arrival.topic == Self.bareTopic, let target = Int64(String(decoding: arrival.payload, as: UTF8.self)) {
                seen { $0.bare.append(arrival.realtime - target) }
            } else if arrival.topic == Daemon.topic("events"), let event = arrival.json, event["event"] as? String == "alerting",
               let id = event["alarmID"] as? String {
                observer.publish(Daemon.command("stop"), #"{"id":"\#(id)"}"#)
                seen { $0.received[id] = arrival.realtime }
            } else if arrival.topic == Daemon.topic("sim/outputs"), let outputs = arrival.json, let buzzer = outputs["buzzer"] as? Bool {
                let set = (outputs["realtime"] as? NSNumber)?.int64Value
                seen { seen in
                    if buzzer, !seen.buzzer, let set { seen.lineSet.append(set) }
                    seen.buzzer = buzzer
                }
            }
            return false
        }
        defer { observer.unwatch(watcher) }
        let baseline = Task { await clockNanosleepLateness(targets: instants.map { ($0 + spacing / 2) * 1_000_000 }, publisher: publisher) }
        for (id, instant) in zip(ids, instants) {
            try await requester.command(Daemon.command("schedule"), Alarms.schedule(id: id, fixedAt: instant))
        }
        let scheduledBy = Nanos.realtime() / 1_000_000
        let counted = instants.indices.filter { instants[$0] > scheduledBy + 200 }
        let steal = Steal()
        try await Task.sleep(for: .nanoseconds((instants.last! + spacing + 1500) * 1_000_000 - Nanos.realtime()))
        let stolen = steal.percent, sleeps = await baseline.value, result = seen { $0 }
        var lineSet: [Int64] = [], received: [Int64] = []
        for i in counted {
            let due = instants[i] * 1_000_000, half = spacing * 500_000
            if let set = result.lineSet.first(where: { $0 >= due - half && $0 < due + half }) { lineSet.append(set - due) }
            if let at = result.received[ids[i]] { received.append(at - due) }
        }
        return (lineSet, received, sleeps, result.bare, counted.count, stolen)
    }

    /// Waits (15 s at most) until `list` is empty: stopped one-shot alarms are gone, stragglers silenced.
    private func waitUntilEmpty() async throws {
        for _ in 0..<30 {
            if (try await requester.command(Daemon.command("list"), "{}").json["alarms"] as? [Any])?.isEmpty == true { return }
            try await Task.sleep(for: .milliseconds(500))
        }
        report.note("alarms of rows 1-3 were still listed 15 s after the last was due")
    }

    // MARK: 3

    /// Alarms with the `siren` sound (the buzzer is on nearly all the time), each stopped by a
    /// simulated press; from the release edge (`sim/buttons`) to the buzzer and LED off
    /// (`sim/outputs`), both stamped by the daemon, less the debounce window (a short press is
    /// recognised once the released line has been quiet that long). Baseline: bare sleeps of that
    /// window, one after the other, meanwhile.
    private func stopPresses() async throws {
        let presses = quick ? 20 : 100, debounce: Int64 = 30_000_000
        let pressing = Locked(true), steal = Steal()
        let baseline = Task { await clockNanosleepLateness(interval: debounce, until: { !pressing { $0 } }) }
        var samples: [Int64] = [], failed = 0
        for _ in 0..<presses {
            let id = UUID().uuidString
            let alerting = observer.expect { $0.topic == Daemon.topic("events") && $0.json?["event"] as? String == "alerting" && $0.json?["alarmID"] as? String == id }
            try await requester.command(Daemon.command("schedule"), Alarms.schedule(id: id, fixedAt: Nanos.realtime() / 1_000_000 + 200, sound: "siren"))
            _ = try await alerting.value
            try await Task.sleep(for: .milliseconds(20))
            let release = observer.expect { $0.topic == Daemon.topic("sim/buttons") && $0.json?["pressed"] as? Bool == false }
            let off = observer.expect { $0.topic == Daemon.topic("sim/outputs") && $0.json?["buzzer"] as? Bool == false && $0.json?["led"] as? Bool == false }
            observer.publish(Daemon.topic("sim/press"), #"{"button":"stop","duration":0.1}"#)
            if let offAt = (try? await off.value)?.json?["at"] as? NSNumber, let releasedAt = (try? await release.value)?.json?["at"] as? NSNumber {
                samples.append(offAt.int64Value - releasedAt.int64Value - debounce)
            } else {
                failed += 1
                _ = try? await requester.request(Daemon.command("stop"), #"{"id":"\#(id)"}"#)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        pressing { $0 = false }
        let sleeps = Stats(await baseline.value)
        report.latency("3", "stop press: release edge → buzzer off, − 30 ms debounce", Stats(samples),
                       baseline: "30 ms sleep \(ms(sleeps.p50)) / \(ms(sleeps.p99))", budget: "p99 ≤ 2 ms", limit: failed == 0 ? 2 : -1,
                       steal: steal.percent, note: "daemon's stamps; \(failed) presses failed")
        try await waitUntilEmpty()
    }

    // MARK: 4-5, 8

    /// 99 one-shot alarms a month and more ahead, and a 6-hour timer: 100 alarms.
    private func seedAlarms() async throws {
        let start = (Nanos.realtime() / 1_000_000_000 + 30 * 86_400) * 1000
        for index in 0..<99 {
            try await requester.command(Daemon.command("schedule"), Alarms.schedule(id: UUID().uuidString, fixedAt: start + Int64(index) * 3_600_000))
        }
        timerID = UUID().uuidString
        try await requester.command(Daemon.command("schedule"), Alarms.schedule(id: timerID, timer: 6 * 3600))
    }

    /// The plain Python node, on alarmd's 100 alarms as its `list` gives them.
    private func startPythonNode() async throws {
        guard let python else { return }
        let list = try await requester.request(Daemon.command("list"), "{}")
        let state = folder + "/python"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data(list.payload).write(to: URL(fileURLWithPath: state + "/state.json"))
        let online = observer.expect(within: 20) { $0.topic == "alarmd/python/status" && $0.json?["state"] as? String == "online" }
        pythonNode = try await ChildProcess.spawn("python-node", executable: python.executable,
                                                  arguments: [python.script, "\(port)", "alarmd/python", state + "/state.json"],
                                                  logPath: folder + "/python-node.log")
        do { _ = try await online.value } catch {
            throw BenchError("the Python node did not come online:\n\(pythonNode!.logTail())")
        }
    }

    /// One requester at a person's pace (10 ms between requests): in each round an echo of the list
    /// reply's size, alarmd's `list`, the Python node's, an echo of a change reply's size, a
    /// pause or resume of alarmd's timer and of the Python node's, and one atomic write of the
    /// list reply's size in alarmd's state folder.
    private func commands() async throws {
        let rounds = quick ? 200 : 1000, pythonBase = pythonNode == nil ? nil : "alarmd/python"
        let id = #"{"id":"\#(timerID)"}"#
        var listSize = 0, changeSize = 0, state = [UInt8]()
        // Warm-up, and the reply sizes for the echo.
        for operation in ["list", "pause", "resume", "list"] {
            let reply = try await requester.request(Daemon.command(operation), operation == "list" ? "{}" : id)
            if operation == "list" { (listSize, state) = (reply.payload.count, reply.payload) } else { changeSize = reply.payload.count }
            if let pythonBase { _ = try await requester.command("\(pythonBase)/cmd/\(operation)", operation == "list" ? "{}" : id) }
        }
        var samples: [String: [Int64]] = [:]
        func measure(_ key: String, _ topic: String, _ payload: String) async throws {
            try await Task.sleep(for: .milliseconds(10))
            samples[key, default: []].append(try await requester.command(topic, payload).latency)
        }
        let written = Proc.writeBytes(daemon.pid), steal = Steal()
        for round in 0..<rounds {
            let change = round % 2 == 0 ? "pause" : "resume"
            try await Task.sleep(for: .milliseconds(10))
            samples["write", default: []].append(try atomicWrite(state, in: daemon.stateDirectory))
            try await Task.sleep(for: .milliseconds(10))
            samples["echo list", default: []].append(try await requester.request("bench/echo/\(listSize)", "{}").latency)
            try await measure("list", Daemon.command("list"), "{}")
            if let pythonBase { try await measure("python list", "\(pythonBase)/cmd/list", "{}") }
            try await Task.sleep(for: .milliseconds(10))
            samples["echo change", default: []].append(try await requester.request("bench/echo/\(changeSize)", id).latency)
            try await measure("change", Daemon.command(change), id)
            if let pythonBase { try await measure("python change", "\(pythonBase)/cmd/\(change)", id) }
        }
        let perChange = Double(Proc.writeBytes(daemon.pid) - written) / Double(rounds) / 1024, stolen = steal.percent
        let stats = samples.mapValues { Stats($0) }
        let echoList = stats["echo list"]!, echoChange = stats["echo change"]!, write = stats["write"]!, list = stats["list"]!, change = stats["change"]!
        report.latency("4", "list (100 alarms, \(listSize) B reply), 1 requester", list, baseline: "echo \(ms(echoList.p50)) / \(ms(echoList.p99))",
                       budget: "p99 ≤ 2× echo p99 (\(ms(2 * echoList.p99)))", limit: 2 * echoList.p99, steal: stolen)
        let limit = echoChange.p99 + write.p99 + 0.5
        report.latency("5", "durable change (pause/resume a timer), 1 requester", change,
                       baseline: "echo \(ms(echoChange.p50)) / \(ms(echoChange.p99)); write \(ms(write.p50)) / \(ms(write.p99))",
                       budget: "p99 ≤ echo + write + 0.5 (\(ms(limit)))", limit: limit, steal: stolen,
                       note: "write: temp file, fsync, rename, fsync dir; \(state.count) B, in alarmd's state folder")
        if let pythonList = stats["python list"], let pythonChange = stats["python change"] {
            for (row, what, python, alarmd) in [("4 py", "list, plain Python node", pythonList, list), ("5 py", "durable change, plain Python node", pythonChange, change)] {
                let verdict = alarmd.p50 < python.p50 && alarmd.p99 < python.p99 ? "alarmd faster"
                    : alarmd.p50 > python.p50 && alarmd.p99 > python.p99 ? "Python faster" : "mixed"
                report.add(Row(row: row, what: what, stats: python, unit: "ms", baseline: "alarmd \(ms(alarmd.p50)) / \(ms(alarmd.p99))",
                               budget: "(information)", met: verdict, steal: stolen))
            }
        } else {
            report.missing("4 py", "list and durable change, plain Python node", "no Python with paho-mqtt (--python)", skipped: true)
        }
        report.value("8", "disk writes per durable change (/proc/<pid>/io write_bytes)", perChange, unit: "KiB",
                     baseline: "write \(String(format: "%.1f", Double(state.count) / 1024)) KiB of data", budget: "≤ 8 KiB", limit: 8, steal: stolen,
                     note: "over \(rounds) changes (and as many lists)")
        // Nothing counts down at idle: the timer makes way for a 100th alarm far ahead.
        try await requester.command(Daemon.command("cancel"), id)
        try await requester.command(Daemon.command("schedule"), Alarms.schedule(id: UUID().uuidString, fixedAt: (Nanos.realtime() / 1_000_000_000 + 90 * 86_400) * 1000))
    }

    // MARK: 6-8

    /// alarmd with 100 alarms far ahead, the idle Swift program and the Python node, side by side.
    private func idle() async throws {
        let seconds = quick ? 30 : 60
        try await Task.sleep(for: .seconds(2))
        let pids = [daemon.pid, idleChild.pid] + (pythonNode.map { [$0.pid] } ?? [])
        let before = pids.map(Proc.switches), written = Proc.writeBytes(daemon.pid), steal = Steal()
        let start = Nanos.monotonic()
        try await Task.sleep(for: .seconds(seconds))
        let elapsed = Double(Nanos.monotonic() - start) / 1e9
        let wakeUps = pids.indices.map { Proc.wakeUps(from: before[$0], to: Proc.switches(pids[$0]), seconds: elapsed) }
        let idleWritten = Proc.writeBytes(daemon.pid) - written, stolen = steal.percent
        let floor = wakeUps[1].total
        report.value("6", "idle wake-ups, 100 alarms far ahead (ctxt switches, all threads)", wakeUps[0].total, unit: "/min",
                     baseline: "idle Swift program \(number(floor))/min", budget: "≤ baseline + 10 (\(number(floor + 10)))",
                     limit: floor + 10, steal: stolen, note: "over \(seconds) s; by thread: \(wakeUps[0].byThread); idle Swift program: \(wakeUps[1].byThread)")
        if wakeUps.count > 2 {
            report.add(Row(row: "6 py", what: "idle wake-ups, plain Python node", value: wakeUps[2].total, unit: "/min",
                           baseline: "alarmd \(number(wakeUps[0].total))/min", budget: "(information)",
                           met: wakeUps[0].total < wakeUps[2].total ? "alarmd fewer" : "Python fewer", steal: stolen, note: "by thread: \(wakeUps[2].byThread)"))
        }
        report.value("8 idle", "disk writes at idle", Double(idleWritten) / 1024, unit: "KiB", baseline: "–", budget: "none",
                     limit: 0, steal: stolen, note: "over the same \(seconds) s")
        let memory = Proc.memory(daemon.pid), floorMemory = Proc.memory(idleChild.pid)
        afterUse = memory
        let anonymous = megabytes(memory["Anonymous"]), privateDirty = megabytes(memory["Private_Dirty"])
        func text(_ kB: Int64?) -> String { String(format: "%.2f MB", megabytes(kB)) }
        report.value("7", "memory, 100 alarms: anonymous (smaps_rollup)", anonymous, unit: "MB",
                     baseline: "idle Swift program \(text(floorMemory["Anonymous"]))", budget: "≤ 4 MB (private dirty too)",
                     limit: 4 - max(0, privateDirty - anonymous),  // met when both are within 4 MB
                     note: "private dirty \(text(memory["Private_Dirty"])), PSS \(text(memory["Pss"])), RSS \(text(memory["Rss"])) (at idle, after rows 1-6)")
        if let pythonNode {
            let python = Proc.memory(pythonNode.pid)
            report.value("7 py", "memory, plain Python node: anonymous", megabytes(python["Anonymous"]), unit: "MB",
                         baseline: "alarmd \(text(memory["Anonymous"]))", budget: "(information)", limit: nil,
                         note: "private dirty \(text(python["Private_Dirty"])), PSS \(text(python["Pss"]))")
        }
    }

    // MARK: 9

    /// alarmd stopped (SIGTERM) and started again on its state with 100 alarms: from the spawn to
    /// its retained status saying online, as the bench receives it; then `list` must show 100.
    private func restarts() async throws {
        let starts = quick ? 3 : 5
        var samples: [Int64] = [], restored: [Int] = []
        for _ in 0..<starts {
            await daemon.process.stop()
            let (started, startup) = try await startDaemon(state: daemon.stateDirectory)
            daemon = started
            samples.append(startup)
            restored.append((try await requester.command(Daemon.command("list"), "{}").json["alarms"] as? [Any])?.count ?? 0)
            try await Task.sleep(for: .milliseconds(500))
        }
        report.latency("9", "start → status online, 100 alarms restored", Stats(samples), baseline: "–",
                       budget: "≤ 200 ms", limit: restored.allSatisfy { $0 == 100 } ? 200 : -1,
                       note: "spawn to the retained status as received; restored \(restored.map(String.init).joined(separator: ", ")) alarms")
        // The same node's memory fresh from its start, for comparison with row 7's after use.
        try await Task.sleep(for: .seconds(2))
        let memory = Proc.memory(daemon.pid)
        report.value("7 start", "memory, 100 alarms, 3 s after a start and one list: anonymous", megabytes(memory["Anonymous"]), unit: "MB",
                     baseline: String(format: "row 7, after use: %.2f MB", megabytes(afterUse["Anonymous"])), budget: "(information)", limit: nil,
                     note: String(format: "private dirty %.2f MB, PSS %.2f MB", megabytes(memory["Private_Dirty"]), megabytes(memory["Pss"])))
    }
}

/// kB (as /proc gives them) in MB of 1,000,000 bytes.
func megabytes(_ kB: Int64?) -> Double { Double(kB ?? 0) * 1024 / 1e6 }

/// The command payloads the bench sends, in the JSON of docs/mqtt.md.
enum Alarms {
    static let attributes = ##"{"presentation":{"alert":{"title":"Bench","stopButton":{"text":"Stop","textColor":"#FFFFFF","systemImageName":"stop"}},"countdown":{"title":"Bench timer","pauseButton":{"text":"Pause","textColor":"#34C759","systemImageName":"pause"}},"paused":{"title":"Paused","resumeButton":{"text":"Resume","textColor":"#34C759","systemImageName":"play"}}},"tintColor":"#34C759"}"##

    /// A one-shot alarm at a wall-clock instant in ms since 1970 (`2026-11-22T07:00:00.123Z`, exactly).
    static func schedule(id: String, fixedAt milliseconds: Int64, sound: String? = nil) -> String {
        var seconds = time_t(milliseconds / 1000), parts = tm()
        gmtime_r(&seconds, &parts)
        let date = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                          parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(milliseconds % 1000))
        let sound = sound.map { #"{"named":"\#($0)"}"# } ?? #""default""#
        return #"{"id":"\#(id)","configuration":{"schedule":{"fixed":"\#(date)"},"attributes":\#(attributes),"sound":\#(sound)}}"#
    }
    /// A timer of `seconds`.
    static func schedule(id: String, timer seconds: Int) -> String {
        #"{"id":"\#(id)","configuration":{"countdownDuration":{"preAlert":\#(seconds)},"attributes":\#(attributes)}}"#
    }
}

/// A value behind a mutex, shareable by closures.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func callAsFunction<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}
