import AlarmKit
@testable import AlarmNode
import Foundation
import Testing

@Suite("The list reply: documents' bytes kept until they change")
struct ListReplyEncoderTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func engine(timers count: Int) throws -> AlarmEngine {
        var engine = AlarmEngine()
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(title: "Tea")),
                                                    metadata: .object(["cup": .number(2)]), tintColor: .blue)
        for _ in 0..<count {
            _ = try engine.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes), now: now)
        }
        return engine
    }

    @Test func theBytesAreThoseOfTheWholeReplyThroughChangesAndRemovals() throws {
        var engine = try engine(timers: 3)
        let encoder = ListReplyEncoder()
        func expectSameBytes(correlationID: JSONValue? = nil, node: String? = nil, _ comment: Comment) {
            let documents = engine.documents
            let expected = NodeReply.alarms(documents).payload(correlationID: correlationID, node: node)
            #expect(encoder.payload(documents, correlationID: correlationID, node: node) == expected, comment)
        }
        expectSameBytes("first list")
        expectSameBytes(correlationID: .string("abc"), node: "kitchen", "kept bytes, with a correlation id and a node")
        let paused = try #require(engine.documents.first).id
        _ = try engine.pause(id: paused, now: now.addingTimeInterval(5))
        expectSameBytes("one document changed")
        _ = try engine.cancel(id: paused, now: now.addingTimeInterval(6))
        expectSameBytes(correlationID: .number(7), "one document removed")
        engine = AlarmEngine()
        expectSameBytes("no documents")
    }
}
