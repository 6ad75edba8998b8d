@testable import AlarmKit
import Foundation
import Testing

@Suite("InstantText")
struct InstantTextTests {
    /// Foundation's writer, the reference.
    private func reference(_ date: Date) -> String {
        date.formatted(InstantText.foundationStyle)
    }

    private func written(_ date: Date) -> (string: String, appended: String) {
        var bytes = Array("x".utf8)
        InstantText.append(date, to: &bytes)
        return (InstantText.string(date), String(decoding: bytes.dropFirst(), as: UTF8.self))
    }

    @Test("writes what ISO8601FormatStyle writes, for 60,000 seeded instants from 1970 to 9999", .offTheCooperativePool)
    func matchesFoundation() throws {
        var random = SplitMix64(seed: 8601)
        func whole(_ range: ClosedRange<Int>) -> Double { Double(Int.random(in: range, using: &random)) }
        func milliseconds() -> Double { Double(Int.random(in: 0..<1000, using: &random)) / 1000 }
        let thisCentury = 946_684_800...4_102_444_800, sinceReference = -978_307_200...3_000_000_000
        var mismatches: [String] = []
        for round in 0..<60_000 {
            let date: Date = switch round % 6 {
            // Whole milliseconds, as the engine's instants often are, anywhere in range.
            case 0: Date(timeIntervalSince1970: whole(0...253_402_300_799) + milliseconds())
            case 1: Date(timeIntervalSinceReferenceDate: whole(sinceReference) + milliseconds())
            // Within a microsecond of a millisecond's edge.
            case 2: Date(timeIntervalSince1970: whole(thisCentury) + milliseconds() + Double.random(in: -1e-6...1e-6, using: &random))
            // Any instant in range, and small ones.
            case 3: Date(timeIntervalSinceReferenceDate: Double.random(in: -978_307_200..<252_423_993_600, using: &random))
            case 4: Date(timeIntervalSince1970: Double.random(in: 0..<1, using: &random) * pow(10, Double.random(in: -8...11, using: &random)))
            // Parsed from text, as the state file's and commands' instants are: such a date's
            // interval since 1970 can fall just below the millisecond it says.
            default: try #require(AlarmJSON.date(from: String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int.random(in: 1970...2200, using: &random), Int.random(in: 1...12, using: &random),
                Int.random(in: 1...28, using: &random), Int.random(in: 0...23, using: &random), Int.random(in: 0...59, using: &random),
                Int.random(in: 0...59, using: &random), Int.random(in: 0...999, using: &random))))
            }
            let (string, appended) = written(date)
            if string != reference(date) || appended != string, mismatches.count < 5 {
                mismatches.append("\(date.timeIntervalSinceReferenceDate): \(string)")
            }
        }
        #expect(mismatches.isEmpty)
    }

    @Test("edges: leap days, the range's ends, and instants left to Foundation", arguments: [
        0, 0.0005, 0.999_999_999, 1e-300, 951_782_400, 4_107_456_000, 4_102_444_799.9995, 1_795_364_657.357,
        253_402_300_799.999, 253_402_300_799.9999, 253_402_300_800, -0.5, -1e-10, -62_135_596_800, 1e12,
    ] as [TimeInterval])
    func edges(time: TimeInterval) {
        let date = Date(timeIntervalSince1970: time)
        let (string, appended) = written(date)
        #expect(string == reference(date))
        #expect(appended == string)
    }

    /// Foundation reads ".999" as an interval a hair below it, which truncation writes as
    /// ".998"; written here the same way, byte for byte.
    @Test func writesParsedInstantsAsFoundationDoes() throws {
        let expected = ["2026-11-22T07:00:00.000Z": "2026-11-22T07:00:00.000Z", "2026-11-22T07:10:00.001Z": "2026-11-22T07:10:00.001Z",
                        "2026-11-22T07:10:02.500Z": "2026-11-22T07:10:02.500Z", "2028-02-29T23:59:59.999Z": "2028-02-29T23:59:59.998Z"]
        for (text, written) in expected {
            let date = try #require(AlarmJSON.date(from: text))
            #expect(InstantText.string(date) == written)
            #expect(reference(date) == written)
        }
    }
}
