import Foundation
import Testing
@testable import AlarmKit

/// The engine's indexes of alerting alarms and running countdowns (read after every change, by
/// the outputs) against a scan of every record, over seeded random sequences of operations.
@Suite("The engine's alerting and countdown indexes")
struct EngineIndexTests {
    /// What `alerting` must be: every alerting record, oldest alert first, ties in scheduling order.
    private static func scannedAlerting(_ engine: AlarmEngine) -> [UUID] {
        engine.records.values.enumerated().compactMap { position, record -> (Int, Date, UUID)? in
            guard case .alerting(let since, _) = record.phase else { return nil }
            return (position, since, record.id)
        }
        .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        .map(\.2)
    }

    private static func expectIndexesMatchScan(_ engine: AlarmEngine, step: Int, seed: UInt64) {
        #expect(engine.alerting.map(\.id) == scannedAlerting(engine), "seed \(seed), step \(step)")
        #expect(engine.hasRunningCountdown == engine.records.values.contains { $0.state == .countdown }, "seed \(seed), step \(step)")
    }

    /// What the random walks went through, so that the test shows it exercised the indexes.
    private struct Coverage {
        var alerting = false
        var tiedAlerts = false
        var runningCountdown = false
    }

    @Test("They agree with a scan after every operation")
    func agreeWithScan() {
        var coverage = Coverage()
        for seed in 1...8 as ClosedRange<UInt64> { walk(seed: seed, coverage: &coverage) }
        #expect(coverage.alerting && coverage.tiedAlerts && coverage.runningCountdown, "\(coverage)")
    }

    private func walk(seed: UInt64, coverage: inout Coverage) {
        var random = SplitMix64(seed: seed)
        var now = date("2026-11-22T10:00:00Z")
        var engine = AlarmEngine(configuration: EngineConfiguration(timeZone: zone("Europe/Berlin")))
        var ids: [UUID] = []
        let operations: [AlarmOperation] = AlarmOperation.allCases
        for step in 0..<400 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1, 2:
                // Timers whose pre-alerts often end together, so alerts tie on their instant.
                let id = ids.count < 12 || Bool.random(using: &random) ? UUID() : ids.randomElement(using: &random)!
                let preAlert = TimeInterval(Int.random(in: 1...4, using: &random) * 30)
                let snooze: TimeInterval? = Bool.random(using: &random) ? 60 : nil
                if (try? engine.schedule(id: id, configuration: configuration(preAlert: preAlert, postAlert: snooze,
                                                                             secondary: snooze == nil ? nil : .countdown), now: now)) != nil,
                   !ids.contains(id) {
                    ids.append(id)
                }
            case 3, 4:
                if let id = ids.randomElement(using: &random) {
                    _ = try? engine.perform(operations.randomElement(using: &random)!, id: id, now: now)
                }
            case 5:
                if let id = ids.randomElement(using: &random) { _ = try? engine.secondaryAction(id: id, now: now) }
            case 6:
                _ = engine.wallClockStepped(by: TimeInterval(Int.random(in: -90...90, using: &random)), now: now)
            case 7:
                _ = engine.setClockTrusted(Bool.random(using: &random), now: now)
            default:
                now += TimeInterval(Int.random(in: 0...90, using: &random))
                _ = engine.advance(to: now)
            }
            Self.expectIndexesMatchScan(engine, step: step, seed: seed)
            let alerting = engine.alerting
            coverage.alerting = coverage.alerting || !alerting.isEmpty
            coverage.tiedAlerts = coverage.tiedAlerts || Set(alerting.map(\.since)).count < alerting.count
            coverage.runningCountdown = coverage.runningCountdown || engine.hasRunningCountdown
        }
        // An engine restored from the same records indexes them as they are.
        let restored = AlarmEngine(configuration: engine.configuration, records: Array(engine.records.values))
        Self.expectIndexesMatchScan(restored, step: -1, seed: seed)
        #expect(restored.alerting.map(\.id) == engine.alerting.map(\.id))
    }
}
