import Foundation
import Testing
@testable import AlarmKit

@Suite("Durations as people write them")
struct DurationTextTests {
    @Test("Reading", arguments: [
        ("90s", 90.0), ("10m", 600), ("1h30m", 5400), ("1d", 86_400), ("45", 45), ("2.5", 2.5),
        (" 1m30s\t", 90), ("\u{00A0}10m\u{3000}", 600), ("10 min", 600), ("10mins", 600), ("10 minutes", 600),
        ("1 hour 30 minutes", 5400), ("2 Hours", 7200), ("1 day", 86_400), ("90 sec", 90), ("1h 30m", 5400), ("1.5 h", 5400),
        ("30ms", 0.03), ("1s 500ms", 1.5), ("250 milliseconds", 0.25),
    ])
    func reading(text: String, seconds: Double) {
        #expect(DurationText.seconds(from: text) == seconds)
    }

    @Test("Refused", arguments: ["", "m", "1m1h", "1x", "inf", "1m\n", "10 minutes 5 minutes", "10 mi", "minutes", "10 min s", "10ms 1s"])
    func refused(text: String) {
        #expect(DurationText.seconds(from: text) == nil)
    }

    @Test("Writing", arguments: [
        (0.0, "0s"), (45, "45s"), (90.5, "1m30.5s"), (5400, "1h30m"), (86_461, "1d1m1s"),
        (0.05, "0.1s"), (0.15, "0.1s"), (0.25, "0.2s"), (0.45, "0.5s"), (-3, "0s"),
        (59.97, "1m"), (119.97, "2m"), (3599.96, "1h"), (60.97, "1m1.0s"), // tenths that carry into a unit
        (1e300, "∞"), // an event's `late` as any publisher to the node's events topic may give it
    ])
    func writing(seconds: Double, text: String) {
        #expect(DurationText.format(seconds) == text)
    }

    /// The tenths are rounded as `String(format: "%.1f")` rounds, which the formatter used
    /// before it left Foundation; one that rounds to 60.0 reads as a minute.
    @Test("Tenths as printf rounds them, on 100,000 seeded values", .offTheCooperativePool)
    func tenthsLikePrintf() {
        var generator = SplitMix64(seed: 0x7E47)
        for _ in 0..<100_000 {
            let whole = Double(generator.next() % 60)
            let rest = whole + Double(generator.next() % 1000) / 1000 + Double(generator.next() % 3) * 0.0005
            guard rest.rounded(.down) != rest else { continue }
            let printf = String(format: "%.1f", rest)
            #expect(DurationText.format(rest) == (printf == "60.0" ? "1m" : printf + "s"), "\(rest)")
        }
    }
}
