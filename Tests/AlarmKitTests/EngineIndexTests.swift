import Foundation
import Testing
@testable import AlarmKit

/// The engine's indexes of alerting alarms, running countdowns and soonest dates (read after
/// every change, by the outputs) against a scan of every record, over seeded random sequences
/// of operations.
@Suite("The engine's alerting, countdown and soonest-date indexes")
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
        #expect(engine.isAlerting == engine.records.values.contains { $0.state == .alerting }, "seed \(seed), step \(step)")
        #expect(engine.soonestAlertDate == engine.records.values.compactMap(\.nextAlertDate).min(), "seed \(seed), step \(step)")
        #expect(engine.soonestCountdownEnd == engine.records.values.filter { $0.state == .countdown }.compactMap(\.nextAlertDate).min(),
                "seed \(seed), step \(step)")
    }

    /// What the random walks went through, so that the test shows it exercised the indexes.
    private struct Coverage {
        var alerting = false
        var tiedAlerts = false
        var runningCountdown = false
        /// The soonest date moved later: its entry went stale (a pause, a stop, a cancel).
        var soonestAlertMovedLater = false
        var soonestCountdownMovedLater = false
    }

    @Test("They agree with a scan after every operation", .offTheCooperativePool)
    func agreeWithScan() {
        var coverage = Coverage()
        for seed in 1...8 as ClosedRange<UInt64> { walk(seed: seed, coverage: &coverage) }
        #expect(coverage.alerting && coverage.tiedAlerts && coverage.runningCountdown
                && coverage.soonestAlertMovedLater && coverage.soonestCountdownMovedLater, "\(coverage)")
    }

    private func walk(seed: UInt64, coverage: inout Coverage) {
        var last: AlarmEngine?
        randomEngineWalk(seed: seed, steps: 400) { engine, step in
            Self.expectIndexesMatchScan(engine, step: step, seed: seed)
            let alerting = engine.alerting
            coverage.alerting = coverage.alerting || !alerting.isEmpty
            coverage.tiedAlerts = coverage.tiedAlerts || Set(alerting.map(\.since)).count < alerting.count
            coverage.runningCountdown = coverage.runningCountdown || engine.hasRunningCountdown
            if let before = last?.soonestAlertDate, let after = engine.soonestAlertDate, after > before {
                coverage.soonestAlertMovedLater = true
            }
            if let before = last?.soonestCountdownEnd, let after = engine.soonestCountdownEnd, after > before {
                coverage.soonestCountdownMovedLater = true
            }
            last = engine
        }
        // An engine restored from the same records indexes them as they are.
        guard let engine = last else { return }
        let restored = AlarmEngine(configuration: engine.configuration, records: Array(engine.records.values))
        Self.expectIndexesMatchScan(restored, step: -1, seed: seed)
        #expect(restored.alerting.map(\.id) == engine.alerting.map(\.id))
        #expect(restored.soonestAlertDate == engine.soonestAlertDate && restored.soonestCountdownEnd == engine.soonestCountdownEnd)
    }
}
