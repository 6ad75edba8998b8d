import Foundation
import Testing
@testable import AlarmKit

/// `CompactJSON` against its reference, `AlarmJSON.encoder`, byte for byte.
@Suite("CompactJSON")
struct CompactJSONTests {
    private func text(_ bytes: some Sequence<UInt8>) -> String { String(decoding: Array(bytes), as: UTF8.self) }

    private func written(_ value: JSONValue) -> String {
        var bytes: [UInt8] = []
        CompactJSON.append(value, to: &bytes)
        return text(bytes)
    }

    /// Strings with every character class the escaping distinguishes.
    static let awkwardStrings = [
        "", "plain", "quote \" backslash \\ slash / done", "\u{0}\u{1}\u{7}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1B}\u{1F}",
        "\u{7F} DEL", "héllo wörld", "日本語", "emoji 🔔⏰", "\u{2028}\u{2029}", "{\"nested\":[1,2]}", "\\u0041",
    ]

    /// Numbers in the forms `description` takes: integral, fractional, exponents, negative zero.
    static let numbers: [Double] = [
        0, -0.0, 1, -1, 7, 0.5, 0.1, 1.0 / 3, 123_456_789, 1e15, 1e16, 1.5e17, 1e-5, 2.5e-7, -3.75, 4_294_967_296,
        86_400, 1_795_364_657.357, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 9_007_199_254_740_993,
    ]

    @Test("Scalars", arguments: [JSONValue.null, .bool(true), .bool(false)] + numbers.map(JSONValue.number) + awkwardStrings.map(JSONValue.string))
    func scalars(value: JSONValue) throws {
        #expect(written(value) == text(try AlarmJSON.encoder.encode(value)))
    }

    /// A seeded random JSON value, nested up to `depth`, with keys that sort differently as
    /// UTF-8 bytes than as characters might.
    private static func randomValue(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        let keys = ["a", "B", "b", "_", "aa", "a b", "é", "z", "Z", "10", "9", "\"q\"", "/", "ü", "ab", "at", "event"]
        switch Int.random(in: 0..<(depth > 0 ? 7 : 4), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(Bool.random(using: &random) ? numbers.randomElement(using: &random)! : Double(Int.random(in: -1000...1000, using: &random)) / 8)
        case 3: return .string(awkwardStrings.randomElement(using: &random)!)
        case 4, 5:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                members[keys.randomElement(using: &random)!] = randomValue(&random, depth: depth - 1)
            }
            return .object(members)
        default:
            return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth - 1) })
        }
    }

    @Test("NaN and infinities, which JSON cannot hold, are written as null")
    func nonFinite() {
        for number in [Double.nan, .infinity, -.infinity] { #expect(written(.number(number)) == "null") }
    }

    @Test("Nested values, seeded")
    func nestedValues() throws {
        var random = SplitMix64(seed: 2026)
        for _ in 0..<2_000 {
            let value = Self.randomValue(&random, depth: 4)
            #expect(written(value) == text(try AlarmJSON.encoder.encode(value)), "\(value)")
        }
    }

    @Test("Events, with and without an alarm, with details")
    func events() throws {
        var random = SplitMix64(seed: 11)
        for index in 0..<500 {
            var details: [String: JSONValue] = [:]
            if case .object(let members) = Self.randomValue(&random, depth: 2) { details = members }
            let event = AlarmEvent(AlarmEvent.Name.allCases[index % AlarmEvent.Name.allCases.count],
                                   alarmID: index.isMultiple(of: 3) ? nil : UUID(),
                                   at: Date(timeIntervalSince1970: 1_795_000_000 + Double(index) * 12.345),
                                   details: details)
            #expect(text(event.json) == text(try AlarmJSON.encoder.encode(event)))
        }
    }

    /// Documents and records as the node writes them (the rest by `CompactJSON`, the configuration
    /// spliced in) against `AlarmJSON.encoder`, for every alarm after every step of random walks.
    @Test("Documents and records over random walks through the engine", .offTheCooperativePool)
    func documentsAndRecords() throws {
        var phases: Set<Alarm.State> = []
        var sawOccurrenceDays = false
        for seed in 1...4 as ClosedRange<UInt64> {
            let encoder = SplicingAlarmEncoder()
            var mismatches = 0
            randomEngineWalk(seed: seed, steps: 150) { engine, _ in
                for record in engine.records.values {
                    phases.insert(record.state)
                    sawOccurrenceDays = sawOccurrenceDays || record.pendingOccurrenceDay != nil
                    // A throw on either side counts as a mismatch too.
                    let written = try? encoder.encode(record), reference = try? Array(AlarmJSON.encoder.encode(record))
                    if written == nil || written != reference { mismatches += 1 }
                    if let document = engine.document(for: record.id) {
                        let written = try? encoder.encode(document), reference = try? Array(AlarmJSON.encoder.encode(document))
                        if written == nil || written != reference { mismatches += 1 }
                    }
                }
            }
            #expect(mismatches == 0, "seed \(seed)")
        }
        #expect(phases == Set(Alarm.State.allCases))
        #expect(sawOccurrenceDays)
    }
}
