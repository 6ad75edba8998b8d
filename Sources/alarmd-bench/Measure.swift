import Foundation
import Glibc
import LinuxSystem
import Synchronization

/// Clock readings in nanoseconds: the monotonic clock for durations, the wall clock for lateness
/// against wall-clock instants (alarms are scheduled in wall-clock time).
enum Nanos {
    static func monotonic() -> Int64 { ClockReading.nanoseconds(CLOCK_MONOTONIC) }
    static func realtime() -> Int64 { ClockReading.nanoseconds(CLOCK_REALTIME) }
}

/// p50, p99 and max of a sample, in microseconds. Percentiles are nearest-rank.
struct Stats: Codable, Sendable {
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double

    init(nanoseconds samples: [Int64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func rank(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = Swift.max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1)
            return Double(sorted[Swift.min(index, sorted.count - 1)]) / 1000
        }
        p50 = rank(0.50)
        p99 = rank(0.99)
        max = rank(1.0)
    }
}

/// The baseline of alert precision: how late a bare `clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)`
/// wakes up for each of `targets` (wall-clock ns), on a thread of its own.
func clockNanosleepLateness(targets: [Int64]) async -> [Int64] {
    await onSleeperThread { targets.map(lateness(sleepingUntil:)) }
}

/// Tells a measurement running on another thread when its phase is over.
final class PhaseFlag: Sendable {
    private let running = Atomic(true)
    var isRunning: Bool { running.load(ordering: .relaxed) }
    func end() { running.store(false, ordering: .relaxed) }
}

/// The same baseline for a phase of unknown length: sleeps of `interval` ns, one after the
/// other, until `phase` ends.
func clockNanosleepLateness(sleepsOf interval: Int64, during phase: PhaseFlag) async -> [Int64] {
    await onSleeperThread {
        var samples: [Int64] = []
        while phase.isRunning {
            samples.append(lateness(sleepingUntil: Nanos.realtime() + interval))
        }
        return samples
    }
}

/// Sleeps with `clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)` until `target` (wall-clock ns) and
/// returns how late it woke.
private func lateness(sleepingUntil target: Int64) -> Int64 {
    var deadline = timespec(tv_sec: Int(target / 1_000_000_000), tv_nsec: Int(target % 1_000_000_000))
    while clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &deadline, nil) == EINTR {}
    return Nanos.realtime() - target
}

/// Runs `body` on a thread of its own, so that its sleeps measure the kernel, not Swift's pool.
private func onSleeperThread(_ body: @escaping @Sendable () -> [Int64]) async -> [Int64] {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.name = "bench-nanosleep"
        thread.start()
    }
}

/// Sleeps until the wall clock reads `nanoseconds` (coarsely: for pacing, not measuring).
func sleep(untilRealtime nanoseconds: Int64) async throws {
    let remaining = nanoseconds - Nanos.realtime()
    if remaining > 0 { try await Task.sleep(for: .nanoseconds(remaining)) }
}

/// Milliseconds as a readable number: 0.123 ms.
func milliseconds(_ microseconds: Double) -> String {
    microseconds.isNaN ? "–" : String(format: "%.3f", microseconds / 1000)
}
