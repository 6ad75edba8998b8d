import Foundation
import Testing
@testable import AlarmKit

@Suite("SplicingAlarmEncoder")
struct SplicingAlarmEncoderTests {
    static let fixtures = ["alarm-countdown", "alarm-fixed-paused", "alarm-relative-scheduled", "alarm-weekly-alerting"]

    func text(_ bytes: some Sequence<UInt8>) -> String { String(decoding: Array(bytes), as: UTF8.self) }

    @Test("A document is the bytes AlarmJSON.encoder writes", arguments: fixtures)
    func documents(fixture: String) throws {
        let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: JSONFixtureTests.fixture(fixture))
        let encoder = SplicingAlarmEncoder()
        // Twice: the second comes from the cache.
        for _ in 0..<2 {
            #expect(text(try encoder.encode(document)) == text(try AlarmJSON.encoder.encode(document)))
        }
    }

    @Test("Records in every phase, and after their state and configuration change")
    func records() throws {
        let encoder = SplicingAlarmEncoder()
        var (engine, ids) = try NodeStateEncoderTests().engineInEveryPhase()
        func check() throws {
            for record in engine.records.values {
                #expect(text(try encoder.encode(record)) == text(try AlarmJSON.encoder.encode(record)))
                let document = try #require(engine.document(for: record.id))
                #expect(text(try encoder.encode(document)) == text(try AlarmJSON.encoder.encode(document)))
            }
        }
        try check()
        let start = NodeStateEncoderTests().start
        _ = try engine.perform(.resume, id: ids[3], now: start + 30)
        _ = try engine.schedule(id: ids[1], configuration: configuration(
            schedule: weekly(8, 0, [.sunday]), postAlert: 300, secondary: .countdown, title: "Replaced, \"quoted\" {braces} [brackets]",
            stopIntent: .publish(topic: "home/x", payload: "ON {alarmID}", retain: true)), now: start + 31)
        try check()
    }

    @Test func splitsMembersWhateverTheirValuesHold() {
        let object = Array(#"{"a":"x,\"}{","b":{"c":[1,{"d":2}]},"e":null}"#.utf8)
        let members = JSONObjectMembers.split(object).map { text(object[$0]) }
        #expect(members == [#""a":"x,\"}{""#, #""b":{"c":[1,{"d":2}]}"#, #""e":null"#])
        #expect(JSONObjectMembers.split(Array("{}".utf8)).isEmpty)
    }

    @Test func forgettingAnAlarmDropsItsConfiguration() throws {
        let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: JSONFixtureTests.fixture("alarm-countdown"))
        let encoder = SplicingAlarmEncoder()
        _ = try encoder.encode(document)
        #expect(encoder.cachedCount == 1)
        encoder.forget(document.id)
        #expect(encoder.cachedCount == 0)
    }

    @Test func aDocumentEncodedWithoutRememberingLeavesTheCacheAsItWas() throws {
        let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: JSONFixtureTests.fixture("alarm-countdown"))
        let encoder = SplicingAlarmEncoder()
        #expect(text(try encoder.encode(document, remembering: false)) == text(try AlarmJSON.encoder.encode(document)))
        #expect(encoder.cachedCount == 0)
        _ = try encoder.encode(document)
        #expect(text(try encoder.encode(document, remembering: false)) == text(try AlarmJSON.encoder.encode(document)))
        #expect(encoder.cachedCount == 1)
    }
}
