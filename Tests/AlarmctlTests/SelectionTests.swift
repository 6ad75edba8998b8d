import AlarmKit
import AlarmctlCore
import Foundation
import Testing

@Suite("Alarm ids: full, prefix, --all")
struct SelectionTests {
    @Test("A full id, or a unique prefix in any case, with or without hyphens")
    func resolves() throws {
        let documents = try Fixtures.mixed()
        let tea = Fixtures.id("94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55")
        for text in ["94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55", "94dfecc6-80ea-4fd9-ac4f-39a8d9a63f55", "94D", "9", "94dfecc680ea"] {
            #expect(try AlarmSelection.resolve(text, among: documents).id == tea, "\(text)")
        }
    }

    @Test("No match is 'not found' (exit 4) and says how to find ids")
    func notFound() throws {
        #expect(throws: AlarmctlError.notFound("no alarm has the id or title 'ABC': `alarmctl list` shows them")) {
            try AlarmSelection.resolve("ABC", among: try Fixtures.mixed())
        }
        #expect(AlarmctlError.notFound("").exitStatus == .notFound)
    }

    @Test("A prefix of several ids is ambiguous (exit 4) and lists them")
    func ambiguous() throws {
        let first = try Fixtures.runningTimer(id: Fixtures.id("AAAA0000-0000-4000-8000-000000000001"), title: "One", total: 60, remaining: 30)
        let second = try Fixtures.runningTimer(id: Fixtures.id("AAAA0000-0000-4000-8000-000000000002"), title: "Two", total: 60, remaining: 30)
        let error = #expect(throws: AlarmctlError.self) { try AlarmSelection.resolve("aaaa", among: [first, second]) }
        #expect(error == .ambiguous("'aaaa' matches 2 alarms (\(first.id.uuidString) \"One\", \(second.id.uuidString) \"Two\"): give the id, or more of its characters"))
        #expect(error?.exitStatus == .notFound)
        #expect(try AlarmSelection.resolve("AAAA0000-0000-4000-8000-000000000002", among: [first, second]).id == second.id)
    }

    @Test("A unique title names its alarm, in any case")
    func byTitle() throws {
        let documents = try Fixtures.mixed()
        #expect(try AlarmSelection.resolve("tea", among: documents).id == Fixtures.id("94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55"))
        #expect(try AlarmSelection.resolve("Wake up", among: documents).id == Fixtures.id("11643830-2570-481D-8226-0DC7D20DC2EA"))
    }

    @Test("A title two alarms share is ambiguous and lists both")
    func sharedTitle() throws {
        let first = try Fixtures.runningTimer(id: Fixtures.id("AAAA0000-0000-4000-8000-000000000001"), title: "Tea", total: 60, remaining: 30)
        let second = try Fixtures.runningTimer(id: Fixtures.id("BBBB0000-0000-4000-8000-000000000002"), title: "tea", total: 60, remaining: 30)
        let error = #expect(throws: AlarmctlError.self) { try AlarmSelection.resolve("Tea", among: [first, second]) }
        #expect(error == .ambiguous("'Tea' matches 2 alarms (\(first.id.uuidString) \"Tea\", \(second.id.uuidString) \"tea\"): give the id, or more of its characters"))
    }

    @Test("With --group, a title that one of the group's alarms has names it, though a member's own alarm has it too")
    func groupTitle() throws {
        var ofGroup = try Fixtures.alertingAlarm(id: Fixtures.id("AAAA0000-0000-4000-8000-000000000001"), title: "Wake up")
        ofGroup.group = "family"
        var ofOtherGroup = try Fixtures.alertingAlarm(id: Fixtures.id("CCCC0000-0000-4000-8000-000000000003"), title: "Wake up")
        ofOtherGroup.group = "kidsroom"
        let own = try Fixtures.runningTimer(id: Fixtures.id("BBBB0000-0000-4000-8000-000000000002"), title: "Wake up", total: 3600, remaining: 60)
        let documents = [own, ofOtherGroup, ofGroup]
        #expect(try AlarmSelection.resolve(["wake up"], among: documents, group: "family").map(\.id) == [ofGroup.id])
        #expect(try AlarmSelection.resolve(["BBBB"], among: documents, group: "family").map(\.id) == [own.id], "an id still names a member's own alarm")
        #expect(throws: AlarmctlError.self, "two alarms of the group with one title are still ambiguous") {
            try AlarmSelection.resolve(["Wake up"], among: documents + [ofGroup].map { var copy = $0; copy.id = UUID(); return copy }, group: "family")
        }
        #expect(throws: AlarmctlError.self, "without the group, the title is ambiguous") { try AlarmSelection.resolve(["Wake up"], among: documents) }
        // An id prefix shared by a member's own alarm and the group's stays ambiguous: a cancel of the
        // group's on every member is not what a short prefix may guess.
        var sharingPrefix = ofGroup
        sharingPrefix.id = Fixtures.id("BBBB0000-0000-4000-8000-000000000009")
        #expect(throws: AlarmctlError.self, "an ambiguous id prefix stays ambiguous with --group") {
            try AlarmSelection.resolve(["BBBB"], among: [own, sharingPrefix], group: "family")
        }
    }

    @Test("Neither an id nor a title is 'not found'", arguments: ["", "xyz", "9Z", "--"])
    func neitherIDNorTitle(text: String) throws {
        #expect(throws: AlarmctlError.notFound("no alarm has the id or title '\(text)': `alarmctl list` shows them")) {
            try AlarmSelection.resolve(text, among: try Fixtures.mixed())
        }
    }

    @Test("Several ids resolve in order, each once")
    func several() throws {
        let selected = try AlarmSelection.resolve(["26B", "94D", "26b098ad"], among: try Fixtures.mixed())
        #expect(selected.map(\.id.uuidString.first) == ["2", "9"])
    }

    @Test("--all takes the alarms the operation applies to: in a state it accepts, and for snooze with a snooze")
    func all() throws {
        var noSnooze = try Fixtures.alertingAlarm(id: Fixtures.id("0E0E0000-1111-4222-8333-444455556666"), title: "No snooze")
        noSnooze.configuration.countdownDuration = nil
        let documents = try Fixtures.mixed() + [noSnooze]
        func titles(_ operation: AlarmOperation) -> [String] {
            AlarmSelection.all(for: operation, among: documents).map(AlarmText.title(of:))
        }
        #expect(titles(.stop) == ["Nap over", "No snooze"])
        #expect(titles(.countdown) == ["Nap over"], "an alarm with neither postAlert nor preAlert cannot be snoozed")
        #expect(titles(.pause) == ["Tea"])
        #expect(titles(.resume) == ["Pizza"])
        #expect(titles(.cancel).count == 6)
    }

    @Test("snooze --all leaves out an alerting alarm whose countdown durations are both null")
    func allSkipsEmptyCountdownDuration() throws {
        var noSnooze = try Fixtures.alertingAlarm(id: Fixtures.id("0E0E0000-1111-4222-8333-444455556667"), title: "No snooze")
        noSnooze.configuration.countdownDuration = .init(preAlert: nil, postAlert: nil)
        #expect(AlarmSelection.all(for: .countdown, among: [noSnooze]).isEmpty)
    }

    @Test("Short ids are 8 characters, longer only when two would look alike")
    func shortIDs() {
        let plain = [Fixtures.id("11643830-2570-481D-8226-0DC7D20DC2EA"), Fixtures.id("94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55")]
        #expect(AlarmSelection.shortIDs(plain).values.sorted() == ["11643830", "94DFECC6"])
        let alike = [Fixtures.id("AAAA0000-0000-4000-8000-000000000001"), Fixtures.id("AAAA0000-1000-4000-8000-000000000002")]
        #expect(AlarmSelection.shortIDs(alike).values.sorted() == ["AAAA0000-0", "AAAA0000-1"])
    }
}
