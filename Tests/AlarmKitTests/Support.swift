import Foundation
import MosquittoTestSupport
import Testing
@testable import AlarmKit

/// An instant written as ISO 8601, for readable tests.
func date(_ text: String) -> Date {
    guard let date = AlarmJSON.date(from: text) else { preconditionFailure("bad test date \(text)") }
    return date
}

func zone(_ identifier: String) -> TimeZone {
    guard let zone = TimeZone(identifier: identifier) else { preconditionFailure("unknown zone \(identifier)") }
    return zone
}

let dismiss = AlarmButton(text: "Dismiss", textColor: .white, systemImageName: "stop.circle")
let snoozeButton = AlarmButton(text: "Snooze", textColor: .white, systemImageName: "zzz")

/// A configuration with only what a test cares about.
func configuration(
    schedule: Alarm.Schedule? = nil, preAlert: TimeInterval? = nil, postAlert: TimeInterval? = nil,
    secondary: AlarmPresentation.Alert.SecondaryButtonBehavior? = nil, title: String = "Wake up",
    stopIntent: AlarmIntent? = nil, secondaryIntent: AlarmIntent? = nil, sound: AlertConfiguration.AlertSound = .default
) -> AlarmManager.AlarmConfiguration<JSONValue> {
    var alert = AlarmPresentation.Alert(
        title: title, secondaryButton: secondary == nil ? nil : snoozeButton, secondaryButtonBehavior: secondary)
    alert.stopButton = dismiss
    let countdown: Alarm.CountdownDuration? = preAlert == nil && postAlert == nil
        ? nil : .init(preAlert: preAlert, postAlert: postAlert)
    return .init(countdownDuration: countdown, schedule: schedule,
                 attributes: .init(presentation: AlarmPresentation(alert: alert), tintColor: .blue),
                 stopIntent: stopIntent, secondaryIntent: secondaryIntent, sound: sound)
}

func weekly(_ hour: Int, _ minute: Int, _ days: [Locale.Weekday]) -> Alarm.Schedule {
    .relative(.init(time: .init(hour: hour, minute: minute), repeats: .weekly(days)))
}

func once(_ hour: Int, _ minute: Int) -> Alarm.Schedule {
    .relative(.init(time: .init(hour: hour, minute: minute)))
}

extension Array where Element == AlarmEffect {
    /// The names of the events among the effects, in order.
    var eventNames: [AlarmEvent.Name] {
        compactMap { if case .event(let event) = $0 { event.name } else { nil } }
    }

    func event(_ name: AlarmEvent.Name) -> AlarmEvent? {
        lazy.compactMap { if case .event(let event) = $0, event.name == name { event } else { nil } }.first
    }

    var removedIDs: [UUID] {
        compactMap { if case .removed(let id) = $0 { id } else { nil } }
    }
}

/// A seeded random walk through the engine's operations: timers whose pre-alerts often end
/// together (so alerts tie), some with a snooze, weekly and one-off alarms, every operation on a
/// random alarm, snoozes, wall-clock steps, clock trust and time passing. `visit` sees the engine
/// after every step.
func randomEngineWalk(seed: UInt64, steps: Int, _ visit: (AlarmEngine, Int) -> Void) {
    var random = SplitMix64(seed: seed)
    var now = date("2026-11-22T10:00:00Z")
    var engine = AlarmEngine(configuration: EngineConfiguration(timeZone: zone("Europe/Berlin")))
    var ids: [UUID] = []
    for step in 0..<steps {
        switch Int.random(in: 0..<11, using: &random) {
        case 0, 1, 2:
            let id = ids.count < 12 || Bool.random(using: &random) ? UUID() : ids.randomElement(using: &random)!
            let preAlert = TimeInterval(Int.random(in: 1...4, using: &random) * 30)
            let snooze: TimeInterval? = Bool.random(using: &random) ? 60 : nil
            if (try? engine.schedule(id: id, configuration: configuration(preAlert: preAlert, postAlert: snooze,
                                                                         secondary: snooze == nil ? nil : .countdown), now: now)) != nil,
               !ids.contains(id) {
                ids.append(id)
            }
        case 3:
            let id = UUID()
            let minute = Int.random(in: 0...59, using: &random)
            let schedule = Bool.random(using: &random) ? weekly(10, minute, [.sunday, .monday]) : once(11, minute)
            if (try? engine.schedule(id: id, configuration: configuration(schedule: schedule, postAlert: 120, secondary: .countdown,
                                                                         title: "Wake \"up\" / \u{1F514}"), now: now)) != nil {
                ids.append(id)
            }
        case 4, 5:
            if let id = ids.randomElement(using: &random) {
                _ = try? engine.perform(AlarmOperation.allCases.randomElement(using: &random)!, id: id, now: now)
            }
        case 6:
            if let id = ids.randomElement(using: &random) { _ = try? engine.secondaryAction(id: id, now: now) }
        case 7:
            _ = engine.wallClockStepped(by: TimeInterval(Int.random(in: -90...90, using: &random)), now: now)
        case 8:
            _ = engine.setClockTrusted(Bool.random(using: &random), now: now)
        default:
            now += TimeInterval(Int.random(in: 0...90, using: &random)) + Double(Int.random(in: 0...999, using: &random)) / 1000
            _ = engine.advance(to: now)
        }
        visit(engine, step)
    }
}

/// Gave up waiting for something a test waits for.
struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "gave up waiting for \(what)" }
}

/// Yields until `condition` holds; throws `WaitTimedOut` after `limit` instead of spinning forever.
func waitUntil(_ what: String, within limit: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let start = ContinuousClock.now
    while !condition() {
        guard ContinuousClock.now - start < limit else { throw WaitTimedOut(what: what) }
        await Task.yield()
    }
}

/// Runs a node on `clock` (driven by `manual`) with `delegate`, schedules a 60 s timer, waits until
/// the node's timer sleeps with its actor free, calls `beforeAlert`, moves the clock to the timer's
/// end, and once the node reports the alarm alerting calls `afterAlert` with the node.
func alertOneTimer(
    clock: any AlarmClock, manual: ManualAlarmClock, delegate: any AlarmNodeDelegate,
    beforeAlert: () -> Void = {}, afterAlert: (LocalAlarmNode) async throws -> Void = { _ in }
) async throws {
    let node = LocalAlarmNode(configuration: EngineConfiguration(timeZone: zone("Europe/Berlin")), clock: clock, delegate: delegate)
    let timer = Task { await node.run() }
    defer { timer.cancel() }
    _ = try await node.schedule(id: UUID(), configuration: configuration(preAlert: 60))
    try await waitUntil("the node's timer to sleep") { manual.sleeperCount > 0 }
    // The timer's loop may still be on the node's actor, about to wait for the sleeping task:
    // a call to the actor returns once it is free, so the wake-up below finds it idle.
    await node.withEngine { _ in }
    beforeAlert()
    manual.advance(by: 60)
    _ = try await firstValue(of: node.documentUpdates.stream()) { $0.first?.state == .alerting }
    try await afterAlert(node)
}

/// Runs a test on a dispatch queue of its own instead of Swift's cooperative pool: for the long
/// CPU-bound tests (seconds in a debug build). The pool has one thread per core, and all the
/// test targets run in one process: on CI's two cores, two synchronous tests of seconds held both
/// threads, and every other test, with its time guards, stood still for 12 s. On a queue of its
/// own the kernel shares the cores between them instead. The test keeps its task (and so its
/// `#expect`s their test); only where it runs changes (`withTaskExecutorPreference`).
struct OffTheCooperativePool: TestTrait, TestScoping {
    /// Runs its jobs, in order, on a serial dispatch queue (an overcommitting thread, not the pool's).
    final class QueueExecutor: TaskExecutor {
        private let queue: DispatchQueue

        init(label: String) {
            queue = DispatchQueue(label: label)
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(QueueExecutor(label: "test: \(test.name)"), operation: function)
    }
}

extension Trait where Self == OffTheCooperativePool {
    /// See ``OffTheCooperativePool``.
    static var offTheCooperativePool: Self { Self() }
}
