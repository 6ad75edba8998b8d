import AlarmKit
import Foundation

/// 8. In process: how long a command takes to read, what a change's JSON takes to write, and how
/// `AlarmEngine.schedule`, `nextDeadline` and `advance(to:)` (with nothing due) grow from 100 to
/// 10,000 alarms. Logarithmic growth would make 10,000 about twice 100. At each size also what
/// the node does after every change besides the engine: the outputs' summary and the state file's
/// encoding.
struct EngineScale {
    let repetitions: Int

    func run(_ bench: Bench) throws {
        let section = "8 engine"
        let sizes = [100, 1000, 10_000]
        let utc = TimeZone(identifier: "UTC")!
        var medians: [String: [Double]] = [:]
        var sink = 0.0
        for size in sizes {
            var engine = AlarmEngine(configuration: EngineConfiguration(maximumAlarms: 20_000, timeZone: utc),
                                     records: try Workloads.farAheadRecords(count: size))
            let now = Date()
            // Always after every seeded alarm, so scheduling one never changes which is next.
            let later = try Workloads.configuration(Workloads.fixedAlarm(at: (Nanos.realtime() / 1_000_000 / 1000 + 400 * 86_400) * 1000))
            let count = size >= 10_000 ? max(20, repetitions / 5) : repetitions
            var schedule: [Int64] = [], deadline: [Int64] = [], advance: [Int64] = [], onCopy: [Int64] = []
            for _ in 0..<count {
                let id = UUID()
                var start = Nanos.monotonic()
                sink += Double(try engine.schedule(id: id, configuration: later, now: now).count)
                schedule.append(Nanos.monotonic() - start)
                _ = try engine.cancel(id: id, now: now)

                start = Nanos.monotonic()
                sink += engine.nextDeadline?.timeIntervalSince1970 ?? 0
                deadline.append(Nanos.monotonic() - start)

                start = Nanos.monotonic()
                sink += Double(engine.advance(to: now).count)
                advance.append(Nanos.monotonic() - start)
            }
            // The same change while a snapshot of the engine is kept elsewhere, as the node kept
            // one until this evening: copy-on-write then copies every alarm. Timed apart, so its
            // cache misses do not slow the rows above.
            for _ in 0..<count {
                let kept = engine
                let start = Nanos.monotonic()
                var copy = kept
                sink += Double(try copy.schedule(id: UUID(), configuration: later, now: now).count)
                onCopy.append(Nanos.monotonic() - start)
            }
            for (name, samples) in [("schedule", schedule), ("nextDeadline", deadline), ("advance(to:), nothing due", advance)] {
                let stats = Stats(nanoseconds: samples)
                medians[name, default: []].append(stats.p50)
                bench.report.add(section, "\(name), \(size) alarms", stats, inMicroseconds: true)
            }
            bench.report.add(section, "schedule while a snapshot is kept (copy-on-write), \(size) alarms", Stats(nanoseconds: onCopy),
                             inMicroseconds: true)
            sink += summary(bench, section: section, engine: engine, count: count)
            sink += try stateEncoding(bench, section: section, engine: &engine, count: count)
        }
        var logarithmic = true
        for name in ["schedule", "nextDeadline", "advance(to:), nothing due"] {
            let values = medians[name] ?? []
            guard values.count == 3 else { continue }
            let growth = values[2] / values[0]
            logarithmic = logarithmic && growth <= 3
            bench.report.add(section, "\(name): median at 10,000 / at 100", value: growth, unit: "×",
                             note: "1,000 / 100: \(ratio(values[1], values[0]))")
        }
        bench.report.goal(section, "per-operation cost logarithmic (10,000 / 100 ≤ 3×)",
                          measured: "see the ratios", met: logarithmic)
        sink += decoding(bench, section: section)
        sink += try writing(bench, section: section)
        if sink == -1 { print(sink) }
    }

    /// The outputs' summary of the alarms after a change (the next alarm, whether one alerts, the
    /// soonest countdown: what the Home Assistant state shows), from the engine's indexes; the
    /// baseline is a scan of every record, how it was computed until the indexes existed.
    private func summary(_ bench: Bench, section: String, engine: AlarmEngine, count: Int) -> Double {
        var sink = 0.0
        var indexed: [Int64] = [], scanned: [Int64] = []
        for _ in 0..<count {
            var start = Nanos.monotonic()
            sink += (engine.soonestAlertDate?.timeIntervalSince1970 ?? 0) + (engine.soonestCountdownEnd?.timeIntervalSince1970 ?? 0)
                + (engine.isAlerting ? 1 : 0)
            indexed.append(Nanos.monotonic() - start)
            start = Nanos.monotonic()
            var next: Date?, countdownEnds: Date?, alerting = false
            for record in engine.records.values {
                if record.state == .alerting { alerting = true }
                guard let date = record.nextAlertDate else { continue }
                if next.map({ date < $0 }) ?? true { next = date }
                if record.state == .countdown, countdownEnds.map({ date < $0 }) ?? true { countdownEnds = date }
            }
            sink += (next?.timeIntervalSince1970 ?? 0) + (countdownEnds?.timeIntervalSince1970 ?? 0) + (alerting ? 1 : 0)
            scanned.append(Nanos.monotonic() - start)
        }
        let size = engine.records.count
        let stats = Stats(nanoseconds: indexed), base = Stats(nanoseconds: scanned)
        bench.report.add(section, "outputs' summary by scanning every record, \(size) alarms", base, inMicroseconds: true, baseline: true)
        bench.report.add(section, "outputs' summary from the engine's indexes, \(size) alarms", stats, inMicroseconds: true,
                         note: "median \(ratio(stats.p50, base.p50)) of the scan's")
        return sink
    }

    /// Encoding the state file after a change of one alarm (a timer paused or resumed, as in
    /// section 3), as the node's writer does: every other alarm's bytes are reused, known unchanged by the
    /// revision the engine stamped on it. The baseline gets copies without revisions, so that each
    /// is compared field by field with the one encoded before, how it was done until revisions.
    private func stateEncoding(_ bench: Bench, section: String, engine: inout AlarmEngine, count: Int) throws -> Double {
        let id = UUID(), now = Date()
        _ = try engine.schedule(id: id, configuration: try Workloads.configuration(Workloads.timer(seconds: 6 * 3600)), now: now)
        let stamped = NodeStateEncoder(), compared = NodeStateEncoder()
        var sink = 0.0
        var byRevision: [Int64] = [], byComparison: [Int64] = []
        for iteration in 0..<(count + 1) {
            _ = try engine.perform(iteration % 2 == 0 ? .pause : .resume, id: id, now: now + Double(iteration))
            let state = NodeState(authorization: .authorized, alarms: Array(engine.records.values))
            let unstamped = NodeState(authorization: .authorized, alarms: state.alarms.map { record in
                var copy = record
                copy.lastOccurrenceDay = record.lastOccurrenceDay  // any change clears the revision
                return copy
            })
            var start = Nanos.monotonic()
            let first = try stamped.encode(state)
            let stampedTime = Nanos.monotonic() - start
            start = Nanos.monotonic()
            let second = try compared.encode(unstamped)
            let comparedTime = Nanos.monotonic() - start
            guard first == second else { throw BenchError("the state encoded by revision differs from the state encoded by comparison") }
            sink += Double(first.count)
            // The first round fills both caches.
            if iteration > 0 {
                byRevision.append(stampedTime)
                byComparison.append(comparedTime)
            }
        }
        _ = try engine.cancel(id: id, now: now)
        let size = engine.records.count
        let stats = Stats(nanoseconds: byRevision), base = Stats(nanoseconds: byComparison)
        bench.report.add(section, "state file encoded after one change, records compared, \(size) alarms", base,
                         inMicroseconds: true, baseline: true)
        bench.report.add(section, "state file encoded after one change, by revision, \(size) alarms", stats, inMicroseconds: true,
                         note: "median \(ratio(stats.p50, base.p50)) of the comparison's")
        return sink
    }

    /// Reading a command's payload, for a schedule and a pause: its first step, the JSON text
    /// into a `JSONValue`, by AlarmKit's parser and, as the baseline, by `JSONDecoder` (how the
    /// decoder read it before); then the whole of `NodeCommand.decode` (the parser, then the
    /// configuration's `Codable` decoding).
    private func decoding(_ bench: Bench, section: String) -> Double {
        let schedule = Array(Workloads.schedule(id: UUID(), configuration: Workloads.timer(seconds: 600)).utf8)
        let pause = Array(Workloads.alarmID(UUID()).utf8)
        var sink = 0.0
        for (name, payload) in [("schedule", schedule), ("pause", pause)] {
            var parsed: [Int64] = [], baseline: [Int64] = [], whole: [Int64] = []
            for _ in 0..<repetitions {
                var start = Nanos.monotonic()
                if (try? JSONValue(parsing: payload)) != nil { sink += 1 }
                parsed.append(Nanos.monotonic() - start)
                start = Nanos.monotonic()
                if (try? JSONDecoder().decode(JSONValue.self, from: Data(payload))) != nil { sink += 1 }
                baseline.append(Nanos.monotonic() - start)
                start = Nanos.monotonic()
                if case .success = NodeCommand.decode(operation: name, payload: payload) { sink += 1 }
                whole.append(Nanos.monotonic() - start)
            }
            let stats = Stats(nanoseconds: parsed), base = Stats(nanoseconds: baseline)
            bench.report.add(section, "JSONDecoder into JSONValue, \(name) payload (\(payload.count) B)", base,
                             inMicroseconds: true, baseline: true)
            bench.report.add(section, "JSONValue(parsing:), \(name) payload", stats, inMicroseconds: true,
                             note: "median \(ratio(stats.p50, base.p50)) of the baseline's")
            bench.report.add(section, "NodeCommand.decode, \(name) payload, whole", Stats(nanoseconds: whole), inMicroseconds: true)
        }
        return sink
    }

    /// Writing what a paused timer's change publishes and keeps: its document and its event, the
    /// way the node writes them (the document's configuration spliced in from the encoder's cache,
    /// the rest by `CompactJSON`), against `AlarmJSON.encoder` writing the same values whole.
    private func writing(_ bench: Bench, section: String) throws -> Double {
        var engine = AlarmEngine(configuration: EngineConfiguration(timeZone: TimeZone(identifier: "UTC")!))
        let id = UUID(), now = Date()
        _ = try engine.schedule(id: id, configuration: try Workloads.configuration(Workloads.timer(seconds: 600)), now: now)
        let effects = try engine.pause(id: id, now: now + 5)
        guard let document = engine.document(for: id),
              let event = effects.lazy.compactMap({ effect -> AlarmEvent? in if case .event(let event) = effect { event } else { nil } }).first
        else { throw BenchError("pausing a timer gave no document or event") }
        let encoder = SplicingAlarmEncoder()
        var sink = 0.0
        var written: [Int64] = [], baseline: [Int64] = []
        for _ in 0..<repetitions {
            var start = Nanos.monotonic()
            sink += Double(try encoder.encode(document).count + event.json.count)
            written.append(Nanos.monotonic() - start)
            start = Nanos.monotonic()
            sink += Double(try AlarmJSON.encoder.encode(document).count + AlarmJSON.encoder.encode(event).count)
            baseline.append(Nanos.monotonic() - start)
        }
        let stats = Stats(nanoseconds: written), base = Stats(nanoseconds: baseline)
        bench.report.add(section, "JSONEncoder, a paused timer's document and event", base, inMicroseconds: true, baseline: true)
        bench.report.add(section, "as the node writes them (cached configuration, CompactJSON)", stats, inMicroseconds: true,
                         note: "median \(ratio(stats.p50, base.p50)) of the baseline's")
        return sink
    }
}
