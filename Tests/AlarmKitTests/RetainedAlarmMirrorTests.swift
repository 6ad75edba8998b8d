import Foundation
import Testing
@testable import AlarmKit

@Suite("A node's alarm list rebuilt from its retained topics")
struct RetainedAlarmMirrorTests {
    let a = Self.document(), b = Self.document(), c = Self.document()
    let online = NodeStatus(state: "online", alarms: 3)

    static func document() -> AlarmDocument {
        AlarmDocument(id: UUID(), state: .scheduled, configuration: configuration(schedule: once(7, 0)),
                      presentationState: nil, nextAlertDate: nil)
    }

    /// A mirror that knew a, b and c, then lost its connection.
    func knewThreeThenLost() -> RetainedAlarmMirror {
        var mirror = RetainedAlarmMirror()
        for doc in [a, b, c] { _ = mirror.received(doc, id: doc.id, retained: true) }
        _ = mirror.received(online, retained: true)
        mirror.subscriptionLost()
        return mirror
    }

    func ids(_ outcome: RetainedAlarmMirror.Outcome) -> Set<UUID>? { outcome.list.map { Set($0.map(\.id)) } }

    @Test("The documents, then the status: the list is whole at the status")
    func replayThenStatus() {
        var mirror = RetainedAlarmMirror()
        for doc in [a, b, c] { #expect(mirror.received(doc, id: doc.id, retained: true).list == nil) }
        #expect(ids(mirror.received(online, retained: true)) == [a.id, b.id, c.id])
        #expect(mirror.isKnown)
    }

    @Test("After a broker restart the status comes before the documents: the list never shrinks meanwhile")
    func statusBeforeDocuments() {
        var mirror = knewThreeThenLost()
        // The node published its status, not yet its documents, when this subscription came.
        let status = mirror.received(online, retained: true)
        #expect(status.list == nil && status.askForList)
        #expect(ids(mirror.received(a, id: a.id, retained: false)) == [a.id, b.id, c.id])
        #expect(ids(mirror.received(b, id: b.id, retained: false)) == [a.id, b.id, c.id])
        #expect(ids(mirror.received(c, id: c.id, retained: false)) == [a.id, b.id, c.id])
        // A status that counts what came ends the replay; it asks for nothing more.
        let later = mirror.received(online, retained: false)
        #expect(ids(later) == [a.id, b.id, c.id] && !later.askForList)
    }

    @Test("A document on another alarm's topic does not list its alarm twice")
    func documentOnAnotherAlarmsTopic() {
        var mirror = RetainedAlarmMirror()
        _ = mirror.received(a, id: a.id, retained: true)
        _ = mirror.received(a, id: b.id, retained: true)
        #expect(mirror.received(NodeStatus(state: "online", alarms: 1), retained: true).list?.map(\.id) == [a.id])
    }

    @Test("An alarm removed while away goes with the node's list, not before it")
    func removedWhileAwayStatusFirst() {
        var mirror = knewThreeThenLost()
        #expect(mirror.received(NodeStatus(state: "online", alarms: 2), retained: true).askForList)
        _ = mirror.received(a, id: a.id, retained: false)
        #expect(ids(mirror.received(b, id: b.id, retained: false)) == [a.id, b.id, c.id], "no shrink yet")
        #expect(Set(mirror.replace(with: [a, b]).map(\.id)) == [a.id, b.id])
    }

    @Test("A list answered after changes published since it was asked puts back no alarm removed, nor an older state")
    func listOvertakenByChanges() {
        var mirror = RetainedAlarmMirror()
        for doc in [a, b, c] { _ = mirror.received(doc, id: doc.id, retained: true) }
        _ = mirror.received(online, retained: true)
        mirror.listAsked()
        // The node took its list, then cancelled a and changed b before the list's write was on disk.
        var changed = b
        changed.state = .countdown
        _ = mirror.received(nil, id: a.id, retained: false)
        _ = mirror.received(changed, id: b.id, retained: false)
        #expect(mirror.replace(with: [a, b, c]) == [changed, c], "the removal and the change stand")
        // The next list, asked for afterwards, is the node's word again.
        mirror.listAsked()
        #expect(mirror.replace(with: [b]) == [b])
    }

    @Test("An alarm added during the replay does not end it early: none goes that still exists")
    func addedDuringReplay() {
        var mirror = knewThreeThenLost()
        let d = Self.document()
        _ = mirror.received(online, retained: true)
        _ = mirror.received(a, id: a.id, retained: false)
        _ = mirror.received(b, id: b.id, retained: false)
        // d is scheduled meanwhile: its document comes before the status that counts it.
        #expect(ids(mirror.received(d, id: d.id, retained: false)) == [a.id, b.id, c.id, d.id])
        #expect(ids(mirror.received(NodeStatus(state: "online", alarms: 4), retained: false)) == nil)
        #expect(ids(mirror.received(c, id: c.id, retained: false)) == [a.id, b.id, c.id, d.id])
    }

    @Test("A list asked for that does not come ends the replay with what came, removing nothing")
    func listUnanswered() {
        var mirror = RetainedAlarmMirror()
        #expect(mirror.received(NodeStatus(state: "online", alarms: 2), retained: true).askForList)
        #expect(mirror.received(a, id: a.id, retained: false).list == nil)
        #expect(mirror.isMissingDocuments)
        #expect(ids(mirror.listUnanswered()) == [a.id])
        #expect(!mirror.isMissingDocuments)
        #expect(mirror.isKnown)
        #expect(mirror.listUnanswered() == .init(), "nothing awaited any more")
    }

    @Test("A first subscription that comes between the status and the documents waits for them")
    func firstSubscriptionWaits() {
        var mirror = RetainedAlarmMirror()
        #expect(mirror.received(online, retained: true) == .init(askForList: true))
        #expect(mirror.received(a, id: a.id, retained: false).list == nil)
        #expect(!mirror.isKnown)
        #expect(mirror.received(NodeStatus(state: "online", alarms: 3), retained: false) == .init(), "asks once")
        _ = mirror.received(b, id: b.id, retained: false)
        #expect(ids(mirror.received(c, id: c.id, retained: false)) == [a.id, b.id, c.id])
        #expect(mirror.isKnown)
    }

    @Test("An alarm removed while the subscriber was away goes when the replay ends")
    func removedMeanwhile() {
        var mirror = knewThreeThenLost()
        for doc in [a, b] { _ = mirror.received(doc, id: doc.id, retained: true) }
        #expect(ids(mirror.received(NodeStatus(state: "online", alarms: 2), retained: true)) == [a.id, b.id])
    }

    @Test("A removal during the replay does not end it early")
    func removalDuringReplay() {
        var mirror = RetainedAlarmMirror()
        _ = mirror.received(a, id: a.id, retained: true)
        _ = mirror.received(online, retained: true)
        _ = mirror.received(b, id: b.id, retained: false)
        // b is cancelled: its topic is cleared, then the status counts two.
        _ = mirror.received(nil, id: b.id, retained: false)
        #expect(mirror.received(NodeStatus(state: "online", alarms: 2), retained: false).list == nil)
        #expect(ids(mirror.received(c, id: c.id, retained: false)) == [a.id, c.id])
    }

    @Test("A broker that replays no document to a wildcard: the list comes from the node's answer")
    func listAnswer() {
        var mirror = RetainedAlarmMirror()
        #expect(mirror.received(online, retained: true).askForList)
        _ = mirror.replace(with: [a, b, c])
        #expect(mirror.isKnown && mirror.documents.count == 3)
        #expect(mirror.received(online, retained: false) == .init())
    }

    @Test("An offline status, retained, ends the replay as it is; a live change with no status makes the list known")
    func offlineAndNoStatus() {
        var mirror = RetainedAlarmMirror()
        _ = mirror.received(a, id: a.id, retained: true)
        #expect(ids(mirror.received(.will(lastOnline: Date()), retained: true)) == [a.id])
        var noStatus = RetainedAlarmMirror()
        #expect(ids(noStatus.received(b, id: b.id, retained: false)) == [b.id])
        #expect(noStatus.isKnown)
    }
}
