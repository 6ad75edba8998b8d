@testable import AlarmNode
import Testing

/// When the daemon gives freed memory back: once, after a burst of writes is over.
@Suite("Quiet memory release")
struct QuietMemoryReleaseTests {
    /// Runs the events in order ("w" a write, "t" the timer firing) and returns what each asked
    /// for: "start" a timer, "release" the memory, "again" (the timer restarts), "-" nothing.
    static func run(_ events: [Character]) -> [String] {
        var schedule = QuietMemoryRelease.Schedule()
        return events.map { event in
            switch event {
            case "w": return schedule.wrote() ? "start" : "-"
            default: return schedule.timerFired() ? "release" : "again"
            }
        }
    }

    @Test("One write: the first timer finds it and waits once more; the next finds quiet and releases")
    func singleWrite() {
        #expect(Self.run(["w", "t", "t"]) == ["start", "again", "release"])
    }

    @Test("A burst keeps one timer; the release comes only after a quiet period, then a new burst starts again")
    func burst() {
        let events: [Character] = ["w"] + Array(repeating: "w", count: 100) + ["t", "w", "t", "t", "w"]
        let expected = ["start"] + Array(repeating: "-", count: 100) + ["again", "-", "again", "release", "start"]
        #expect(Self.run(events) == expected)
    }

    @Test("Nothing is pending at idle")
    func idle() {
        var schedule = QuietMemoryRelease.Schedule()
        #expect(!schedule.timerPending)
        _ = schedule.wrote()
        _ = schedule.timerFired()
        _ = schedule.timerFired()
        #expect(!schedule.timerPending)
    }
}
