import AlarmKit
import Foundation

/// 8. In process: how long a command takes to read, what a change's JSON takes to write, and how `AlarmEngine.schedule`, `nextDeadline` and `advance(to:)` (with nothing
/// due) grow from 100 to 10,000 alarms. Logarithmic growth would make 10,000 about twice 100.
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
