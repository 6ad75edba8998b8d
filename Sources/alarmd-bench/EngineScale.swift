import AlarmKit
import Foundation

/// 8. In process: how `AlarmEngine.schedule`, `nextDeadline` and `advance(to:)` (with nothing
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
            var schedule: [Int64] = [], deadline: [Int64] = [], advance: [Int64] = []
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
            for (name, samples) in [("schedule", schedule), ("nextDeadline", deadline), ("advance(to:), nothing due", advance)] {
                let stats = Stats(nanoseconds: samples)
                medians[name, default: []].append(stats.p50)
                bench.report.add(section, "\(name), \(size) alarms", stats, inMicroseconds: true)
            }
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
        if sink == -1 { print(sink) }
    }
}
