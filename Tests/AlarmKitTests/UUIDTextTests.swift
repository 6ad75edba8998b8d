@testable import AlarmKit
import Foundation
import Testing

@Suite("UUIDText")
struct UUIDTextTests {
    @Test("writes what uuidString writes, and reads it back in either case, for 10,000 seeded UUIDs", .offTheCooperativePool)
    func matchesFoundation() {
        var generator = SplitMix64(seed: 0x0_0_1D)
        for round in 0..<10_000 {
            // Random ones, and the extremes.
            let id = round == 0 ? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
                : round == 1 ? UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
                : UUID(uuid: withUnsafeBytes(of: (generator.next() as UInt64, generator.next() as UInt64)) { $0.load(as: uuid_t.self) })
            let text = UUIDText.string(id)
            #expect(text == id.uuidString)
            var bytes = Array("x".utf8)
            UUIDText.append(id, to: &bytes)
            #expect(bytes == Array("x\(id.uuidString)".utf8))
            #expect(UUIDText.uuid(text) == id)
            #expect(UUIDText.uuid(text.lowercased()) == id)
            #expect(UUIDText.uuid(text[...]) == id)
        }
    }

    /// Foundation's `UUID(uuidString:)` refuses these too, all but one: it reads
    /// " F1E6A4C-…" (a leading space) as F1E6A40C-…, another id (swift-foundation on Linux,
    /// 6.3.1, which parses with `sscanf`).
    @Test("refuses what is not the canonical form", arguments: [
        "", "2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A7", "2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A777",
        "2F1E6A4C9B1D-4C7E-8F3A-5D2B1C0E9A77-", "2F1E6A4C-9B1D-4C7E-8F3A_5D2B1C0E9A77",
        "{F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A7}", "2F1E6A4G-9B1D-4C7E-8F3A-5D2B1C0E9A77",
        " F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77", "2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9AÄ",
        "2F1E6A4C9B1D4C7E8F3A5D2B1C0E9A77", "2F1E6A4C--9B1D-4C7E-8F3A-5D2B1C0E9A7",
    ])
    func refusesMalformed(_ text: String) {
        #expect(UUIDText.uuid(text) == nil)
    }
}
