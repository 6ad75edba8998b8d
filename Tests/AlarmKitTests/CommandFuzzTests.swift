import Foundation
import Testing
@testable import AlarmKit

/// Seeded random malformed commands: the decoder never traps, and a rejected command (at
/// decoding or in the engine) never changes the state.
@Suite("Command decoder under random input")
struct CommandFuzzTests {
    /// How many payloads: 100,000 by default; `ALARMD_FUZZ_COUNT` changes it.
    static let count = Int(ProcessInfo.processInfo.environment["ALARMD_FUZZ_COUNT"] ?? "") ?? 100_000

    static let valid = Array(#"""
    {"id":"2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77","replyTo":"r","correlationID":1,"configuration":{"schedule":{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["monday","friday"]}}},"countdownDuration":{"preAlert":600,"postAlert":300},"attributes":{"presentation":{"alert":{"title":"Food Ready!","stopButton":{"text":"Dismiss","textColor":"#FFFFFF","systemImageName":"stop.circle"},"secondaryButton":{"text":"Repeat","textColor":"#FFFFFF","systemImageName":"repeat"},"secondaryButtonBehavior":"countdown"},"countdown":{"title":"Cooking","pauseButton":null},"paused":null},"tintColor":"#34C759","metadata":{"method":"frying"}},"sound":{"named":"gentle"},"stopIntent":{"publish":{"topic":"a/b","payload":"x","retain":false}},"secondaryIntent":null}}
    """#.utf8)

    static let tokens: [[UInt8]] = ["null", "true", "-1e309", "1e400", "NaN", "\"\"", "{}", "[]", "\"monday\"", "0", "-0.0",
                                    "\"\u{0000}\"", "{\"a\":", "]", "}", ",", ":", "\"\\ud800\"", "99999999999999999999"].map { Array($0.utf8) }

    static func mutate(_ bytes: [UInt8], _ generator: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + Int(generator.next() % 4)) {
            guard !bytes.isEmpty else { break }
            let position = Int(generator.next() % UInt64(bytes.count))
            switch generator.next() % 6 {
            case 0: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
            case 1: bytes.removeSubrange(position..<min(bytes.count, position + 1 + Int(generator.next() % 16)))
            case 2: bytes.insert(contentsOf: Self.tokens[Int(generator.next() % UInt64(Self.tokens.count))], at: position)
            case 3: bytes = Array(bytes.prefix(position))
            case 4:
                // Replace a value after a colon with a token of another type.
                if let colon = bytes[position...].firstIndex(of: UInt8(ascii: ":")) {
                    let end = bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") } ?? bytes.count
                    bytes.replaceSubrange((colon + 1)..<end, with: Self.tokens[Int(generator.next() % UInt64(Self.tokens.count))])
                }
            default: bytes.swapAt(position, Int(generator.next() % UInt64(bytes.count)))
            }
        }
        return bytes
    }

    @Test("100,000 seeded malformed payloads: no trap, no state change on rejection", .offTheCooperativePool)
    func fuzz() throws {
        var generator = SplitMix64(seed: 0xF022)
        let now = date("2026-11-22T10:00:00Z")
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")))
        _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: now)
        let operations = NodeCommand.Operation.allCases.map(\.rawValue) + ["bogus", ""]
        var accepted = 0, rejected = 0
        for round in 0..<Self.count {
            let payload: [UInt8] = round % 10 == 0
                ? (0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                : Self.mutate(Self.valid, &generator)
            let operation = operations[Int(generator.next() % UInt64(operations.count))]
            let before = engine.records
            switch NodeCommand.decode(operation: operation, payload: payload) {
            case .failure(let rejection):
                rejected += 1
                #expect(!rejection.error.message.isEmpty)
            case .success(let command):
                accepted += 1
                do {
                    switch command.action {
                    case .schedule(let id, let configuration, let group): _ = try engine.schedule(id: id, configuration: configuration, group: group, now: now)
                    case .alarm(let operation, let id): _ = try engine.perform(operation, id: id, now: now)
                    case .requestAuthorization, .list: break
                    }
                } catch {
                    if engine.records != before { Issue.record("a refused \(operation) changed the state: \(error)") }
                }
            }
        }
        #expect(accepted + rejected == Self.count)
        #expect(rejected > Self.count / 2)
    }
}
