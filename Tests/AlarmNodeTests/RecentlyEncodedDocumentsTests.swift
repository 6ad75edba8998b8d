import AlarmKit
@testable import AlarmNode
import Foundation
import Testing

@Suite("Recently encoded documents (reply reuse)")
struct RecentlyEncodedDocumentsTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func document(title: String = "Tea") throws -> AlarmDocument {
        var engine = AlarmEngine()
        let id = UUID()
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(
            title: .init(stringLiteral: title), stopButton: .init(text: "S", textColor: .white, systemImageName: "s"))), tintColor: .blue)
        _ = try engine.schedule(id: id, configuration: .timer(duration: 600, attributes: attributes), now: now)
        return try #require(engine.document(for: id))
    }

    @Test func givesTheBytesOnlyForExactlyThePublishedDocument() throws {
        var recent = RecentlyEncodedDocuments()
        let published = try document()
        recent.remember(published, encoded: [1, 2, 3])
        #expect(recent.encoded(published) == [1, 2, 3])
        var paused = published
        paused.state = .paused
        #expect(recent.encoded(paused) == nil)
        recent.remember(paused, encoded: [4])
        #expect(recent.encoded(published) == nil)
        #expect(recent.encoded(paused) == [4])
    }

    @Test func keepsTheLastCapacityDocumentsAndForgetsOlderOnes() throws {
        var recent = RecentlyEncodedDocuments()
        let first = try document()
        recent.remember(first, encoded: [0])
        var others: [AlarmDocument] = []
        for _ in 1..<RecentlyEncodedDocuments.capacity { others.append(try document()) }
        for other in others { recent.remember(other, encoded: [1]) }
        // `first` and the capacity − 1 after it: all still there, also across the generation change.
        recent.remember(try document(), encoded: [2])
        #expect(recent.encoded(first) == [0])
        #expect(others.allSatisfy { recent.encoded($0) == [1] })
        for _ in 0..<RecentlyEncodedDocuments.capacity { recent.remember(try document(), encoded: [3]) }
        #expect(recent.encoded(first) == nil)
    }

    @Test func aDocumentRememberedAgainWinsOverItsOlderGeneration() throws {
        var recent = RecentlyEncodedDocuments()
        let published = try document()
        recent.remember(published, encoded: [1])
        // Enough for `published` to move to the older generation.
        for _ in 0..<RecentlyEncodedDocuments.capacity { recent.remember(try document(), encoded: [0]) }
        #expect(recent.encoded(published) == [1])
        var paused = published
        paused.state = .paused
        recent.remember(paused, encoded: [2])
        #expect(recent.encoded(paused) == [2])
        #expect(recent.encoded(published) == nil)
    }
}
