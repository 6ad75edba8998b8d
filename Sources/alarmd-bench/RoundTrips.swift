import Foundation
import LinuxSystem
import Mosquitto
import Synchronization

/// 2 and 3. Command round trips over the broker, for a read (`list`) and a durable state change
/// (pause/resume of a timer), with 1 and with 100 concurrent requesters, against the echo and
/// atomic-write baselines; and the rate of state changes with 100 requesters.
struct RoundTrips {
    /// Requests by the single requester, per kind.
    let single: Int
    /// Requests per requester with 100 requesters, per kind and run.
    let perRequester: Int
    /// How many times the rate is measured, alternating with the echo baseline: one run is a
    /// second or two, which a moment of the host's steal time can move by 10 %; the median of
    /// several is the figure, with the slowest and fastest beside it.
    let rateRuns: Int

    /// What a series of requests gave.
    struct Loop {
        var latencies: [Int64] = []
        var failures = 0
        var lost = 0
    }

    /// Each of 100 requesters (connections of ``MQTTRequestLoad``, driven by one thread of the
    /// bench) sends `count` requests one after the other (a closed loop), all at once. `request`
    /// runs for every request on that thread: it should hand out prepared values.
    static func closedLoop(_ bench: Bench, count: Int,
                           _ request: @escaping @Sendable (_ requester: Int, _ iteration: Int) -> (topic: String, payload: [UInt8])) async throws -> MQTTRequestLoad.Outcome {
        try await MQTTRequestLoad.run(host: "127.0.0.1", port: bench.brokerPort, requesters: requesters, requestsPerRequester: count,
                                      clientIDPrefix: "bench-load", request: request, accept: { !isRefusal($0) })
    }

    /// The concurrent requesters of sections 2 and 3.
    static let requesters = 100

    /// One request, added to `loop`.
    static func once(_ client: BenchClient, _ topic: String, _ payload: String, into loop: inout Loop) async {
        do {
            let reply = try await client.request(topic, payload)
            if isRefusal(reply.payload) { loop.failures += 1 } else { loop.latencies.append(reply.latency) }
        } catch {
            loop.lost += 1
        }
    }

    func run(_ bench: Bench, daemon: Daemon) async throws {
        let report = bench.report
        let requester = bench.clients[0]
        let timers = (0..<Self.requesters).map { _ in UUID() }
        let echo = BenchClient.echoTopic

        // One requester, one timer; echo, list and pause/resume interleaved, so that the three
        // see the same conditions over the run.
        try await schedule(timers[0], by: requester, daemon: daemon)
        var warmUp = Loop()
        for iteration in 0..<30 { await Self.once(requester, iteration % 2 == 0 ? echo : daemon.command("list"), "{}", into: &warmUp) }
        // The disk is shared too: one atomic write of the state's size per round as well.
        var echoOne = Loop(), listOne = Loop(), changeOne = Loop(), writes: [Int64] = []
        let stateBytes = daemon.stateFileSize
        for iteration in 0..<single {
            await Self.once(requester, echo, "{}", into: &echoOne)
            await Self.once(requester, daemon.command("list"), "{}", into: &listOne)
            await Self.once(requester, daemon.command(iteration % 2 == 0 ? "pause" : "resume"), Workloads.alarmID(timers[0]),
                            into: &changeOne)
            writes.append(try Self.atomicWrite(bytes: stateBytes, in: daemon.stateDirectory))
        }
        let writeOne = (stats: Stats(nanoseconds: writes), bytes: stateBytes)

        // 100 requesters: list, then (with a timer each) echo and pause/resume in turns.
        let emptyObject = Array("{}".utf8), listTopic = daemon.command("list")
        log("  100 requesters: list")
        let listMany = try await Self.closedLoop(bench, count: perRequester) { _, _ in (listTopic, emptyObject) }
        for id in timers.dropFirst() { try await schedule(id, by: requester, daemon: daemon) }
        // Timer 0 was left paused or running by the single requester: start everyone running.
        _ = try? await requester.request(daemon.command("resume"), Workloads.alarmID(timers[0]))
        let changes = timers.map { id in
            let payload = Array(Workloads.alarmID(id).utf8)
            return [(topic: daemon.command("pause"), payload: payload), (topic: daemon.command("resume"), payload: payload)]
        }
        var echoCPU = CPUShares(bench, daemon: daemon), changeCPU = CPUShares(bench, daemon: daemon)
        var echoRuns: [MQTTRequestLoad.Outcome] = [], changeRuns: [MQTTRequestLoad.Outcome] = []
        for run in 0..<rateRuns {
            log("  100 requesters: echo, run \(run + 1) of \(rateRuns)")
            echoRuns.append(try await echoCPU.measure {
                try await Self.closedLoop(bench, count: perRequester) { _, _ in (echo, emptyObject) }
            })
            // Each timer goes on from where the last run left it: pause after resume, whatever the count.
            let offset = run * perRequester
            log("  100 requesters: pause/resume (the rate of section 3), run \(run + 1) of \(rateRuns)")
            changeRuns.append(try await changeCPU.measure {
                try await Self.closedLoop(bench, count: perRequester) { number, iteration in changes[number][(offset + iteration) % 2] }
            })
        }
        log("  100 requesters: done")
        let echoMany = Self.merged(echoRuns), changeMany = Self.merged(changeRuns)
        let echoCost = echoCPU.perOperation(echoMany.latencies.count)
        let changeCost = changeCPU.perOperation(changeMany.latencies.count)
        let writeMany = try atomicWrites(bytes: daemon.stateFileSize, in: daemon.stateDirectory)
        let consistent = try await finalStateMatches(changeRuns[changeRuns.count - 1], timers: timers, by: requester, daemon: daemon)
        let echoRate = RateRuns(echoRuns), changeRate = RateRuns(changeRuns)

        let s2 = "2 command", s3 = "3 rate"
        let sizeOne = "state \(writeOne.bytes) B, 1 alarm", sizeMany = "state \(writeMany.bytes) B, \(timers.count) alarms"
        let echo1 = Stats(nanoseconds: echoOne.latencies), list1 = Stats(nanoseconds: listOne.latencies)
        let change1 = Stats(nanoseconds: changeOne.latencies)
        report.add(s2, "libmosquitto echo, 1 requester", echo1, baseline: true)
        report.add(s2, "AtomicFile.measureWrite, state-sized", writeOne.stats, baseline: true, note: sizeOne)
        report.add(s2, "list, 1 requester", list1, note: "ratio to echo p50 \(ratio(list1.p50, echo1.p50)), p99 \(ratio(list1.p99, echo1.p99))")
        report.add(s2, "pause/resume (durable), 1 requester", change1,
                   note: "p99 − echo p99 − write p99 = \(milliseconds(change1.p99 - echo1.p99 - writeOne.stats.p99)) ms")
        let echo100 = Stats(nanoseconds: echoMany.latencies), list100 = Stats(nanoseconds: listMany.latencies)
        let change100 = Stats(nanoseconds: changeMany.latencies)
        report.add(s2, "libmosquitto echo, 100 requesters", echo100, baseline: true)
        report.add(s2, "AtomicFile.measureWrite, state-sized", writeMany.stats, baseline: true, note: sizeMany)
        report.add(s2, "list, 100 requesters", list100, note: "ratio to echo p99 \(ratio(list100.p99, echo100.p99))")
        report.add(s2, "pause/resume (durable), 100 requesters", change100)
        report.add(s3, "libmosquitto echo, 100 requesters", value: echoRate.median, unit: "/s", baseline: true, note: echoRate.note)
        report.add(s3, "1 / atomic write p50 (one fsync'd write per change)", value: 1e6 / writeMany.stats.p50, unit: "/s", baseline: true)
        report.add(s3, "durable state changes, 100 requesters", value: changeRate.median, unit: "/s",
                   note: "\(changeRate.note), \(ratio(changeRate.median, echoRate.median)) of echo; \(changeMany.latencies.count) ok, \(changeMany.failures) refused, \(changeMany.lost) lost; final state \(consistent ? "consistent" : "INCONSISTENT")")
        report.add(s3, "CPU per echo: mosquitto / bench", value: echoCost.broker + echoCost.bench, unit: "ms", baseline: true,
                   note: "\(milliseconds(echoCost.broker * 1000)) / \(milliseconds(echoCost.bench * 1000)) ms")
        report.add(s3, "CPU per durable change: alarmd / mosquitto / bench", value: changeCost.total, unit: "ms",
                   note: "\(milliseconds(changeCost.daemon * 1000)) / \(milliseconds(changeCost.broker * 1000)) / \(milliseconds(changeCost.bench * 1000)) ms")
        report.add(s3, "rate the machine's cores allow at that CPU per change", value: changeCost.ceiling, unit: "/s",
                   note: "\(CPUShares.cores) cores / total CPU per change; alarmd alone: \(Report.format(CPUShares.cores * 1000 / changeCost.daemon))/s")
        MachineTicks.reportSteal(changeCPU.machineTicks, during: "the durable-change runs", in: s3, of: report,
                                 note: "; during echo \(String(format: "%.1f", echoCPU.machineTicks.stealPercent)) %")

        report.goal(s2, "list p99 ≤ 2× echo p99 (1 requester)", measured: "\(milliseconds(list1.p99)) vs \(milliseconds(echo1.p99)) ms",
                    met: list1.p99 <= 2 * echo1.p99)
        let budget = echo1.p99 + writeOne.stats.p99 + 500
        report.goal(s2, "state change p99 ≤ echo p99 + write p99 + 0.5 ms (1 requester)",
                    measured: "\(milliseconds(change1.p99)) vs \(milliseconds(budget)) ms", met: change1.p99 <= budget && changeOne.failures + changeOne.lost == 0)
        report.goal(s3, "≥ 5,000 durable changes/s (median of \(rateRuns) runs), 100 requesters, no lost reply, consistent",
                    measured: "\(Report.format(changeRate.median))/s (\(changeRate.range)), \(changeMany.lost) lost, \(consistent ? "consistent" : "inconsistent")",
                    met: changeRate.median >= 5000 && changeMany.lost == 0 && changeMany.failures == 0 && consistent)

        for id in timers { _ = try? await requester.request(daemon.command("cancel"), Workloads.alarmID(id)) }
    }

    /// The runs of one kind as one sample: every latency, every refusal and loss.
    private static func merged(_ runs: [MQTTRequestLoad.Outcome]) -> Loop {
        runs.reduce(into: Loop()) { all, run in
            all.latencies += run.latencies
            all.failures += run.refused
            all.lost += run.lost
        }
    }

    private func schedule(_ id: UUID, by client: BenchClient, daemon: Daemon) async throws {
        let reply = try await client.request(daemon.command("schedule"),
                                             Workloads.schedule(id: id, configuration: Workloads.timer(seconds: 6 * 3600)))
        guard jsonObject(reply.payload)?["ok"] as? Bool == true else {
            throw BenchError("schedule refused: \(String(decoding: reply.payload, as: UTF8.self))")
        }
    }

    /// How long one atomic write of `bytes` takes in `directory`, in ns.
    static func atomicWrite(bytes: Int, in directory: String) throws -> Int64 {
        let total = try AtomicFile.measureWrite(byteCount: max(bytes, 1), in: directory).total.components
        return total.seconds * 1_000_000_000 + total.attoseconds / 1_000_000_000
    }

    /// 50 atomic writes of `bytes` in the daemon's state folder.
    private func atomicWrites(bytes: Int, in directory: String) throws -> (stats: Stats, bytes: Int) {
        (Stats(nanoseconds: try (0..<50).map { _ in try Self.atomicWrite(bytes: bytes, in: directory) }), bytes)
    }

    /// Whether `list` shows every timer in the state its requester's last reply said.
    private func finalStateMatches(_ loop: MQTTRequestLoad.Outcome, timers: [UUID], by client: BenchClient, daemon: Daemon) async throws -> Bool {
        let reply = try await client.request(daemon.command("list"), "{}")
        let alarms = (jsonObject(reply.payload)?["alarms"] as? [[String: Any]]) ?? []
        let listed = Dictionary(alarms.compactMap { alarm in
            (alarm["id"] as? String).flatMap(UUID.init(uuidString:)).map { ($0, alarm["state"] as? String ?? "") }
        }, uniquingKeysWith: { $1 })
        for (number, id) in timers.enumerated() {
            let said = loop.lastAccepted[number].flatMap { (jsonObject($0)?["alarm"] as? [String: Any])?["state"] as? String }
            guard let said, listed[id] == said else { return false }
        }
        return true
    }
}

/// The rates of repeated runs: their median, and the slowest and fastest.
struct RateRuns {
    let rates: [Double]

    init(_ runs: [MQTTRequestLoad.Outcome]) {
        rates = runs.map(\.rate).sorted()
    }

    /// The middle run's rate (the lower middle one of an even count, as nearest rank does).
    var median: Double { rates.isEmpty ? .nan : rates[(rates.count - 1) / 2] }
    var range: String { "runs \(rates.map { Report.format($0) }.joined(separator: ", "))/s" }
    var note: String { "median of \(rates.count): \(range)" }
}

func ratio(_ value: Double, _ baseline: Double) -> String {
    baseline > 0 ? String(format: "%.2f×", value / baseline) : "–"
}

/// CPU time (utime + stime, 10 ms ticks) of alarmd, the broker and the bench itself across a
/// phase: where the machine's cores go when the three share them.
struct CPUShares {
    static let cores = Double(ProcessInfo.processInfo.activeProcessorCount)

    struct PerOperation {
        /// Milliseconds of CPU per operation.
        let daemon: Double, broker: Double, bench: Double
        var total: Double { daemon + broker + bench }
        /// Operations per second that all the cores could carry at this cost.
        var ceiling: Double { total > 0 ? CPUShares.cores * 1000 / total : .infinity }
    }

    private let pids: (daemon: Int32, broker: Int32, bench: Int32)
    /// Ticks used during the phases measured so far.
    private var used: (daemon: Int64, broker: Int64, bench: Int64) = (0, 0, 0)
    /// The machine's ticks during those phases.
    private(set) var machineTicks = MachineTicks(total: 0, steal: 0)

    init(_ bench: Bench, daemon: Daemon) {
        pids = (daemon.pid, bench.brokerPID, getpid())
    }

    /// Runs `phase`, adding the CPU time the three processes use meanwhile.
    mutating func measure<T>(_ phase: () async throws -> T) async throws -> T {
        let before = try Self.ticks(pids), machineBefore = try MachineTicks.read()
        let result = try await phase()
        let after = try Self.ticks(pids)
        machineTicks = machineTicks + (try MachineTicks.read() - machineBefore)
        used = (used.daemon + after.daemon - before.daemon, used.broker + after.broker - before.broker,
                used.bench + after.bench - before.bench)
        return result
    }

    /// The CPU of the phases measured, per operation of the `count` they carried out.
    func perOperation(_ count: Int) -> PerOperation {
        func milliseconds(_ ticks: Int64) -> Double { Double(ticks) / ProcSample.ticksPerSecond * 1000 / Double(max(count, 1)) }
        return PerOperation(daemon: milliseconds(used.daemon), broker: milliseconds(used.broker), bench: milliseconds(used.bench))
    }

    private static func ticks(_ pids: (daemon: Int32, broker: Int32, bench: Int32)) throws -> (daemon: Int64, broker: Int64, bench: Int64) {
        (try ProcSample.read(pid: pids.daemon).cpuTicks, try ProcSample.read(pid: pids.broker).cpuTicks, try ProcSample.read(pid: pids.bench).cpuTicks)
    }
}
