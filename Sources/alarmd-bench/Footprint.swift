import Foundation

/// 5, 6 and 7. What an idle node costs (CPU, wake-ups, memory) and how long it takes to start,
/// with its alarms seeded in its state file far ahead.
struct Footprint {
    let idleSeconds: Int

    /// VmRSS in MiB, and how it splits into anonymous and file-backed memory; `settled` false
    /// says that alarmd had not yet given back its start-up memory.
    static func rss(_ pid: Int32, settled: Bool = true) -> (mib: Double, parts: String) {
        guard let sample = try? ProcSample.read(pid: pid) else { return (.nan, "") }
        return (Double(sample.rssKB) / 1024,
                String(format: "anonymous %.1f, file-backed %.1f MiB", Double(sample.rssAnonymousKB) / 1024, Double(sample.rssFileKB) / 1024)
                    + (settled ? "" : "; start-up memory not released within 60 s"))
    }

    /// Seeds `count` alarms, starts a node on them, and waits until it answers a command.
    private func startSeeded(_ bench: Bench, node: String, count: Int) async throws -> (Daemon, startup: Int64) {
        let directory = "\(bench.folder)/state-\(node)"
        try Workloads.seedState(directory: directory, alarms: count)
        return try await bench.startDaemon(node: node, stateDirectory: directory)
    }

    /// The body of the runtime-floor baseline (`alarmd-bench --runtime-floor-child`): a Swift
    /// program that has used the concurrency runtime once, as every async program does, and
    /// then does nothing. Its wake-ups are those of libdispatch under Swift concurrency on
    /// Linux (the worker-pool monitor, a 1 s timer that runs for the life of the process once
    /// a worker thread has started: `_dispatch_workq_init_once` in libdispatch's workqueue.c).
    /// The bench starts it first: its wake-ups begin only some seconds after its start.
    static func idleAsSwiftProgram() async -> Never {
        await Task.detached { try? await Task.sleep(for: .milliseconds(1)) }.value
        while true { pause() }
    }

    func run(_ bench: Bench) async throws {
        let report = bench.report

        // 5 and 6: 1,000 alarms, idle, beside a bare libmosquitto client with the same keepalive.
        let (idle, _) = try await startSeeded(bench, node: "bench-1k", count: 1000)
        let bare = try await ChildProcess.spawn(
            "mosquitto_sub", executable: "/usr/bin/mosquitto_sub",
            arguments: ["-h", "127.0.0.1", "-p", "\(bench.brokerPort)", "-k", "15", "-q", "1", "-t", "bench/idle", "-i", "bench-idle"],
            logPath: bench.folder + "/mosquitto_sub.log")
        let floor = bench.runtimeFloor
        let settled = try await idle.startupMemoryReleased()
        let before = try ProcSample.read(pid: idle.pid), bareBefore = try ProcSample.read(pid: bare.pid)
        let floorBefore = try ProcSample.read(pid: floor.pid)
        let start = Nanos.monotonic()
        try await Task.sleep(for: .seconds(idleSeconds))
        let after = try ProcSample.read(pid: idle.pid), bareAfter = try ProcSample.read(pid: bare.pid)
        let floorAfter = try ProcSample.read(pid: floor.pid)
        let minutes = Double(Nanos.monotonic() - start) / 60e9
        func perMinute(_ value: Int64) -> Double { (Double(value) / minutes).rounded() }
        let cpu = Double(after.cpuTicks - before.cpuTicks) / ProcSample.ticksPerSecond * 1000 / minutes
        let bareCPU = Double(bareAfter.cpuTicks - bareBefore.cpuTicks) / ProcSample.ticksPerSecond * 1000 / minutes
        let (voluntary, involuntary) = after.switches(since: before)
        let switches = perMinute(voluntary)
        let bareSwitches = perMinute(bareAfter.switches(since: bareBefore).voluntary)
        let floorSwitches = perMinute(floorAfter.switches(since: floorBefore).voluntary)
        let s5 = "5 idle", window = "over \(idleSeconds) s, per minute"
        report.add(s5, "mosquitto_sub (bare libmosquitto, keepalive 15 s): CPU", value: bareCPU, unit: "ms/min", baseline: true, note: window)
        report.add(s5, "mosquitto_sub: voluntary context switches", value: bareSwitches, unit: "/min", baseline: true, note: window)
        report.add(s5, "an idle Swift async program: voluntary context switches", value: floorSwitches, unit: "/min", baseline: true,
                   note: "libdispatch's worker-pool monitor, in every Swift async program on Linux")
        report.add(s5, "alarmd, 1,000 alarms far ahead: CPU", value: cpu, unit: "ms/min", note: "\(after.switches.count) threads; 10 ms tick")
        let byThread = after.switchesByThreadName(since: before).map { "\($0.name) \(Report.format(perMinute($0.voluntary)))" }
        report.add(s5, "alarmd: voluntary context switches (all threads)", value: switches, unit: "/min",
                   note: "by thread: \(byThread.joined(separator: ", ")); involuntary \(Report.format(perMinute(involuntary)))/min")
        // What alarmd adds to the Swift runtime's own wake-ups should be no more than a bare
        // libmosquitto client with the same keepalive needs.
        let added = switches - floorSwitches
        report.goal(s5, "idle wake-ups beyond the Swift runtime's no more than a bare libmosquitto client's",
                    measured: "\(Report.format(switches))/min − \(Report.format(floorSwitches))/min runtime = \(Report.format(added))/min vs \(Report.format(bareSwitches))/min",
                    met: added <= max(bareSwitches * 1.1, bareSwitches + 6))
        let rss1k = Self.rss(idle.pid, settled: settled)
        await bare.stop()
        try await use(idle, bench)
        let rss1kUsed = Self.rss(idle.pid)
        await idle.stop()

        // 6 and 7: 10,000 alarms; then a restart on the same state.
        let (large, firstStart) = try await startSeeded(bench, node: "bench-10k", count: 10_000)
        _ = try await bench.clients[0].request(large.command("pause"), Workloads.alarmID(UUID()))
        let largeSettled = try await large.startupMemoryReleased()
        let rss10k = Self.rss(large.pid, settled: largeSettled)
        let stateBytes = large.stateFileSize
        await large.stop()
        let (restarted, online) = try await bench.startDaemon(node: "bench-10k", stateDirectory: large.stateDirectory)
        let sentAt = Nanos.monotonic()
        // The node answers commands while it republishes every alarm (before the late evening of
        // 2026-11-22 it answered them only after).
        let reply = try await bench.clients[0].request(restarted.command("pause"), Workloads.alarmID(UUID()))
        let responsive = sentAt + reply.latency - restarted.process.spawnedAt
        let largeChanges = try await durableChanges(on: restarted, by: bench.clients[0])
        await restarted.stop()

        let s6 = "6 memory"
        if let rss0 = bench.rssEmpty { report.add(s6, "RSS at idle, 0 alarms", value: rss0.mib, unit: "MiB", note: rss0.parts) }
        report.add(s6, "RSS at idle, 1,000 alarms", value: rss1k.mib, unit: "MiB", note: rss1k.parts)
        report.add(s6, "RSS at idle, 10,000 alarms", value: rss10k.mib, unit: "MiB", note: "\(rss10k.parts); state file \(stateBytes / 1024) KiB")
        report.add(s6, "RSS after use, 1,000 alarms", value: rss1kUsed.mib, unit: "MiB",
                   note: "\(rss1kUsed.parts); after list, pause/resume, an alert and its stop")
        // The issue's 15 MB, read strictly: 15,000,000 bytes (14.3 MiB).
        report.goal(s6, "RSS ≤ 15 MB (14.3 MiB) with 1,000 alarms", measured: String(format: "%.1f MiB", rss1k.mib),
                    met: rss1k.mib * 1_048_576 <= 15_000_000)
        let s7 = "7 start-up"
        if let empty = bench.startupEmpty {
            report.add(s7, "spawn → status online, 0 alarms", value: Double(empty) / 1e6, unit: "ms")
        }
        report.add(s7, "spawn → status online, 10,000 alarms (seeded)", value: Double(firstStart) / 1e6, unit: "ms")
        report.add(s7, "restart: spawn → status online, 10,000 alarms", value: Double(online) / 1e6, unit: "ms")
        report.add(s7, "restart: spawn → first command answered", value: Double(responsive) / 1e6, unit: "ms",
                   note: "while republishing 10,000 retained alarms")
        let s7b = "7 large"
        report.add(s7b, "AtomicFile.measureWrite, state-sized", largeChanges.rewrite, baseline: true,
                   note: "\(largeChanges.stateBytes / 1024) KiB: what each change cost before the journal")
        report.add(s7b, "pause/resume (durable), 1 requester, 10,000 alarms", largeChanges.changes,
                   note: "a journal line each; \(largeChanges.failures) failed")
    }

    /// What a node does in a day, after its idle measurement: lists, a timer paused and resumed,
    /// an alarm that alerts and is stopped; then a quiet moment, so that the heap's freed
    /// memory has been given back, as at idle. The code and data this ran stay resident: only
    /// start-up's are released.
    private func use(_ daemon: Daemon, _ bench: Bench) async throws {
        let client = bench.clients[0]
        for _ in 0..<5 { _ = try await client.request(daemon.command("list"), "{}") }
        let timer = UUID()
        _ = try await client.request(daemon.command("schedule"), Workloads.schedule(id: timer, configuration: Workloads.timer(seconds: 3600)))
        for operation in ["pause", "resume", "pause", "resume"] {
            _ = try await client.request(daemon.command(operation), Workloads.alarmID(timer))
        }
        let alarm = UUID()
        let alerting = bench.observer.expect { arrival in
            arrival.message.topic == "\(daemon.base)/events"
                && jsonObject(arrival.message.payload)?["event"] as? String == "alerting"
                && jsonObject(arrival.message.payload)?["alarmID"] as? String == alarm.uuidString
        }
        let due = Nanos.realtime() / 1_000_000 + 300
        _ = try await client.request(daemon.command("schedule"), Workloads.schedule(id: alarm, configuration: Workloads.fixedAlarm(at: due)))
        _ = try await alerting.value(timeout: 5)
        _ = try await client.request(daemon.command("stop"), Workloads.alarmID(alarm))
        try await Task.sleep(for: .seconds(4))
    }

    /// 40 pause/resume round trips on a timer beside 10,000 alarms, once the restarted node has
    /// republished them (after two that warm up; the first change of a process writes a whole
    /// snapshot), and 5 atomic writes of the state's size.
    private func durableChanges(on daemon: Daemon, by client: BenchClient) async throws -> (changes: Stats, rewrite: Stats, stateBytes: Int, failures: Int) {
        try await Task.sleep(for: .seconds(3))  // past republishing the 10,000 documents after the restart
        let timer = UUID()
        _ = try await client.request(daemon.command("schedule"), Workloads.schedule(id: timer, configuration: Workloads.timer(seconds: 6 * 3600)))
        var loop = RoundTrips.Loop()
        for iteration in 0..<42 {
            await RoundTrips.once(client, daemon.command(iteration % 2 == 0 ? "pause" : "resume"), Workloads.alarmID(timer), into: &loop)
        }
        let stateBytes = daemon.stateFileSize
        let rewrites = try (0..<5).map { _ in try RoundTrips.atomicWrite(bytes: stateBytes, in: daemon.stateDirectory) }
        return (Stats(nanoseconds: Array(loop.latencies.dropFirst(2))), Stats(nanoseconds: rewrites), stateBytes, loop.failures + loop.lost)
    }
}
