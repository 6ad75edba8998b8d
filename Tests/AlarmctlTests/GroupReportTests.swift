import AlarmKit
import AlarmctlCore
import Foundation
import Testing

@Suite("alarmctl --group")
struct GroupReportTests {
    @Test("Options before the command's name are moved behind it; values that look like commands stay values")
    func leadingOptions() {
        #expect(LeadingOptions.movedBehindSubcommand(["--group", "house", "timer", "10m"]) == ["timer", "--group", "house", "10m"])
        #expect(LeadingOptions.movedBehindSubcommand(["--json", "--node", "list", "list"]) == ["list", "--json", "--node", "list"])
        #expect(LeadingOptions.movedBehindSubcommand(["--broker=h:1", "list"]) == ["list", "--broker=h:1"])
        #expect(LeadingOptions.subcommand(["--broker", "h:1", "--json", "bogus", "x"]) == "bogus")
        #expect(LeadingOptions.subcommand(["--generate-completion-script", "bash"]) == nil)
        #expect(LeadingOptions.subcommand([]) == nil)
        #expect(LeadingOptions.movedBehindSubcommand(["list", "--group", "house"]) == ["list", "--group", "house"])
        #expect(LeadingOptions.movedBehindSubcommand(["--help"]) == ["--help"])
    }

    private func document(_ id: UUID) throws -> AlarmDocument {
        try AlarmJSON.decoder.decode(AlarmDocument.self, from: Data("""
        {"id":"\(id.uuidString)","state":"countdown","schedule":null,"countdownDuration":{"preAlert":600,"postAlert":null},
         "attributes":{"presentation":{"alert":{"title":"Tea"}},"tintColor":"#FFFFFF"},"sound":"default",
         "stopIntent":null,"secondaryIntent":null,"presentationState":null,"nextAlertDate":null,"group":"house"}
        """.utf8))
    }

    @Test("Each member's times are shown in its own zone, when its status names it")
    func memberTimeZones() throws {
        let wakeUp = try Fixtures.scheduledAlarm(id: UUID(), title: "Wake up", words: ["07:00", "daily"], nextAlert: "2026-11-23T06:00:00Z")
        var report = GroupReport(group: "house")
        report.add(RemoteGroup.Replies(answered: [.init(node: "berlin", reply: .alarm(wakeUp)), .init(node: "other", reply: .alarm(wakeUp))],
                                       silent: [:]))
        report.memberTimeZones = ["berlin": Fixtures.berlin]
        let lines = report.text(now: Fixtures.now, timeZone: .gmt).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("berlin") && $0.contains("tomorrow 07:00") })
        #expect(lines.contains { $0.hasPrefix("other") && $0.contains("tomorrow 06:00") })
        #expect(lines.first == "group house: 2 answered, 0 silent; times in each member's zone: berlin Europe/Berlin, other GMT")
    }

    @Test("Answers, failures and silent members make the text, the JSON and the exit status")
    func report() throws {
        let id = UUID()
        var report = GroupReport(group: "house")
        report.add(RemoteGroup.Replies(
            answered: [.init(node: "hall", reply: .alarm(try document(id))),
                       .init(node: "kids", reply: .failure(NodeFailure(code: .maximumLimitReached, message: "full")))],
            silent: ["bedroom": NodeStatus.offline(since: Date(timeIntervalSince1970: 0))]), alarmID: id)
        let text = report.text(now: Date(), timeZone: .gmt)
        #expect(text.hasPrefix("group house: 2 answered, 1 silent"))
        #expect(text.contains("kids     error maximumLimitReached: "))
        #expect(text.contains("bedroom  no answer (offline since 1970-01-01T00:00:00.000Z)"))
        #expect(report.failure()?.exitStatus == .refused)
        guard case .object(let json) = report.json, case .array(let answered)? = json["answered"], case .array(let silent)? = json["silent"] else {
            Issue.record("unexpected JSON \(report.json)")
            return
        }
        #expect(answered.count == 2 && silent.count == 1)
        #expect(json["group"] == .string("house"))

        // `stop --all`: a member without the alarm, or where it does not ring, has nothing to do.
        var quiet = GroupReport(group: "house")
        quiet.nothingToDo = [.notFound, .invalidState]
        quiet.titles = [id: "Tea"]
        quiet.add(RemoteGroup.Replies(answered: [.init(node: "hall", reply: .failure(NodeFailure(code: .notFound, message: "no", alarmID: id))),
                                                 .init(node: "kids", reply: .failure(NodeFailure(code: .invalidState, message: "it is countdown")))],
                                      silent: [:]), alarmID: id)
        #expect(quiet.failure() == nil)
        let quietText = quiet.text(now: Date(), timeZone: .gmt)
        #expect(quietText.contains("\(id.uuidString.prefix(8)) \"Tea\":\nhall  nothing to do ("), "the alarm is named: \(quietText)")
        #expect(quietText.contains("kids  nothing to do (it is countdown)"))
        guard case .object(let quietJSON) = quiet.json, case .array(let quietAnswers)? = quietJSON["answered"] else { Issue.record("unexpected JSON \(quiet.json)"); return }
        #expect(quietJSON["id"] == .string(id.uuidString), "the one alarm operated on is named")
        #expect(quietAnswers.count == 2 && quietAnswers.allSatisfy { if case .object(let reply) = $0 { reply["nothingToDo"] == .bool(true) } else { false } },
                "a script tells them from failures")
        quiet.nothingToDo = [.notFound]
        #expect(quiet.failure()?.exitStatus == .refused, "a stop by id where the alarm does not ring is a failure")

        // By id: where another member stopped it, a member where it does not ring has nothing to do.
        var mixed = GroupReport(group: "house")
        mixed.nothingToDo = [.notFound]
        mixed.add(RemoteGroup.Replies(answered: [.init(node: "hall", reply: .alarm(nil)),
                                                 .init(node: "kids", reply: .failure(NodeFailure(code: .invalidState, message: "it is scheduled")))],
                                      silent: [:]), alarmID: id)
        #expect(mixed.failure() == nil)
        #expect(mixed.text(now: Date(), timeZone: .gmt).contains("kids  nothing to do (it is scheduled)"))

        // A member silent on a schedule because it asks for authorization on its buttons says so.
        var asking = GroupReport(group: "house")
        asking.add(RemoteGroup.Replies(answered: [], silent: ["kids": NodeStatus(state: "online", authorization: .notDetermined, authorizationPrompt: 20)]))
        #expect(!asking.text(now: Date(), timeZone: .gmt).contains("authorization"), "a list does not wait for the prompt")
        asking.schedules = true
        #expect(asking.text(now: Date(), timeZone: .gmt).contains("kids  no answer (online): it asks for authorization first: press its stop button now: it waits 20 s from the command's arrival"))
        #expect(asking.failure()?.message.contains("did not answer: it asks for authorization first") == true)

        // A broker that gave no retained status: the summary says offline members cannot be named.
        var unknown = GroupReport(group: "flat")
        unknown.add(RemoteGroup.Replies(answered: [.init(node: "r1", reply: .alarms([]))], silent: [:], membersKnown: false))
        #expect(unknown.text(now: Date(), timeZone: .gmt).hasPrefix("group flat: 1 answered, 0 silent (members not known"))
        guard case .object(let unknownJSON) = unknown.json else { Issue.record("unexpected JSON \(unknown.json)"); return }
        #expect(unknownJSON["membersKnown"] == .bool(false))
        var nobody = GroupReport(group: "house")
        nobody.add(RemoteGroup.Replies(answered: [], silent: [:]))
        #expect(nobody.failure()?.exitStatus == .unreachable)
    }
}
