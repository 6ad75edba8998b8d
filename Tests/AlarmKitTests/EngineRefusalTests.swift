import Foundation
import Testing
@testable import AlarmKit

/// Every engine operation that throws has changed nothing: the node applies operations to its
/// engine in place (no copy to fall back on), so a refused command must leave no trace.
@Suite("A refused operation changes nothing")
struct EngineRefusalTests {
    /// What an operation could have changed.
    private struct Observable: Equatable {
        let records: [AlarmRecord]
        let held: Set<UUID>
        let nextDeadline: Date?
        let alerting: [UUID]
        let runningCountdown: Bool

        init(_ engine: AlarmEngine) {
            records = Array(engine.records.values)
            held = engine.heldAlarms
            nextDeadline = engine.nextDeadline
            alerting = engine.alerting.map(\.id)
            runningCountdown = engine.hasRunningCountdown
        }
    }

    @Test("Every operation, on every alarm and on an unknown one, after each step of random walks", .offTheCooperativePool)
    func refusalsLeaveNoTrace() {
        var refusals = 0
        for seed in 1...3 as ClosedRange<UInt64> {
            randomEngineWalk(seed: seed, steps: 120) { engine, step in
                let now = date("2026-11-22T10:00:00Z").addingTimeInterval(Double(step) * 45)
                for id in Array(engine.records.keys) + [UUID()] {
                    let attempts: [(String, (inout AlarmEngine) throws -> [AlarmEffect])] =
                        AlarmOperation.allCases.map { operation in
                            ("\(operation)", { engine in try engine.perform(operation, id: id, now: now) })
                        } + [
                            ("secondaryAction", { engine in try engine.secondaryAction(id: id, now: now) }),
                            // A timer without a duration fails validation; a one-off in the past never occurs.
                            ("schedule, invalid", { engine in
                                try engine.schedule(id: id, configuration: configuration(), now: now)
                            }),
                        ]
                    for (name, attempt) in attempts {
                        var copy = engine
                        do {
                            _ = try attempt(&copy)
                        } catch {
                            refusals += 1
                            #expect(Observable(copy) == Observable(engine), "seed \(seed), step \(step): \(name) refused with \(NodeFailure(error).code) but changed the engine")
                        }
                    }
                }
            }
        }
        #expect(refusals > 1_000)
    }

    @Test("Scheduling past the limit changes nothing")
    func limit() throws {
        let now = date("2026-11-22T10:00:00Z")
        var engine = AlarmEngine(configuration: EngineConfiguration(maximumAlarms: 2, timeZone: zone("UTC")))
        for _ in 0..<2 { _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: now) }
        let before = Observable(engine)
        #expect(throws: AlarmManager.AlarmError.maximumLimitReached) {
            try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: now)
        }
        #expect(Observable(engine) == before)
    }
}
