import AlarmKit
@testable import CompanionCore
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// A group's alarm is shown once, with the members that hold it; its actions go to the group.
@Suite struct CompanionGroupTests {
    /// The same group timer on kitchen and attic, and a timer of the attic's own.
    func house(kitchen: AlarmDocument, attic: AlarmDocument, atticOnline: Bool = true) throws -> [String: KnownNode] {
        var own = try Fixtures.runningTimer(title: "Bread")
        own.id = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
        let atticDocuments = [Fixtures.inGroup("house", attic), own]
        return ["kitchen": Fixtures.online([Fixtures.inGroup("house", kitchen)]),
                "attic": atticOnline ? Fixtures.online(atticDocuments) : Fixtures.offline(atticDocuments)]
    }

    @Test func aGroupsAlarmIsOneCardWithItsMembersNotOnePerNode() throws {
        let snapshot = CompanionSnapshot(nodes: try house(kitchen: Fixtures.runningTimer(), attic: Fixtures.runningTimer()), now: Fixtures.now)
        #expect(snapshot.groups.map(\.name) == ["house"])
        let card = try #require(snapshot.groups.first?.alarms.first)
        #expect(snapshot.groups.first?.alarms.count == 1)
        #expect(card.id == Fixtures.timerID && card.state == "countdown" && card.title == "Tea")
        #expect(card.members == [MemberView(node: "attic", state: "countdown"), MemberView(node: "kitchen", state: "countdown")])
        #expect(card.membersText == "on attic, kitchen")
        #expect(card.buttons.map(\.action) == [.pause, .cancel])
        // The nodes keep their own alarms only.
        #expect(snapshot.nodes.first { $0.id == "kitchen" }?.alarms.isEmpty == true)
        #expect(snapshot.nodes.first { $0.id == "attic" }?.alarms.map(\.title) == ["Bread"])
        #expect(snapshot.nodes.allSatisfy { $0.alarms.allSatisfy { $0.members == nil } })
    }

    @Test func whereTheMembersDifferTheCardShowsTheAlertAndEachMembersState() throws {
        let nodes = try house(kitchen: Fixtures.inGroup("house", Fixtures.alertingAlarm()), attic: Fixtures.weeklyAlarm())
        let card = try #require(CompanionSnapshot(nodes: nodes, now: Fixtures.now).groups.first?.alarms.first)
        #expect(card.state == "alerting", "the most pressing state is shown")
        #expect(card.buttons.map(\.action) == [.stop, .snooze])
        #expect(card.membersText == "attic: scheduled · kitchen: alerting")
    }

    @Test func membersInOtherZonesGetTheCardsTimeWithItsZone() throws {
        var nodes = try house(kitchen: Fixtures.weeklyAlarm(), attic: Fixtures.weeklyAlarm())
        let card = { try #require(CompanionSnapshot(nodes: nodes, now: Fixtures.now).groups.first?.alarms.first) }
        #expect(try card().nextAlert?.hasSuffix(")") == false, "one zone: the time alone")
        nodes["attic"]?.status?.timeZone = "America/New_York"
        let split = try card().nextAlert ?? ""
        #expect(split.hasSuffix(" (America/New_York)") || split.hasSuffix(" (Europe/Berlin)"), "\(split)")
    }

    @Test func anOfflineMemberIsNamedAndTheCardFollowsTheOnlineOnes() throws {
        let nodes = try house(kitchen: Fixtures.pausedTimer(), attic: Fixtures.alertingAlarm(), atticOnline: false)
        let groups = CompanionSnapshot(nodes: nodes, now: Fixtures.now).groups
        // The attic's alerting copy is its last known state: the kitchen's paused one is shown.
        let alarms = try #require(groups.first?.alarms)
        #expect(alarms.count == 2, "two alarms of the group: the kitchen's timer and the attic's alarm")
        let timer = try #require(alarms.first { $0.id == Fixtures.timerID })
        #expect(timer.state == "paused" && !timer.stale && timer.membersText == "on kitchen")
        let alarm = try #require(alarms.first { $0.id == Fixtures.alarmID })
        #expect(alarm.stale && alarm.buttons.isEmpty, "held only by an offline member")
        #expect(alarm.members == [MemberView(node: "attic", state: "offline")])
    }

    @Test func anActionOnAGroupsAlarmIsCheckedThenGoesToTheGroup() async throws {
        let nodes = try house(kitchen: Fixtures.runningTimer(), attic: Fixtures.runningTimer())
        let action = try CompanionRequests.groupAlarmAction(group: "house", alarm: Fixtures.timerID.uuidString, action: "pause", nodes: nodes)
        #expect(action == .init(group: "house", alarmID: Fixtures.timerID, action: .pause))
        #expect(throws: CompanionError.unknownAlarm(Fixtures.timerID.uuidString, group: "kids")) {
            try CompanionRequests.groupAlarmAction(group: "kids", alarm: Fixtures.timerID.uuidString, action: "pause", nodes: nodes)
        }
        let offline = #expect(throws: CompanionError.self) {
            try CompanionRequests.groupAlarmAction(group: "house", alarm: Fixtures.alarmID.uuidString, action: "stop",
                                                   nodes: try house(kitchen: Fixtures.runningTimer(), attic: Fixtures.alertingAlarm(), atticOnline: false))
        }
        #expect(offline?.status == .serviceUnavailable)

        let hub = CompanionHub()
        for (node, known) in nodes {
            hub.update(node: node, status: known.status)
            hub.update(node: node, documents: known.documents)
        }
        let control = RecordingControl()
        let client = RouterClient(CompanionServer(hub: hub, access: CompanionAccess(password: nil), control: control)
            .router(context: RouterClient.Context.self))
        try await client.run { client in
            let page = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let marker = try #require(page.range(of: #"name="companion-token" content=""#)).upperBound
            let headers: HTTPFields = [HTTPField.Name("X-Companion-Token")!: String(page[marker...].prefix { $0 != "\"" }),
                                       .origin: "http://localhost"]
            try await client.execute(uri: "/api/groups/house/alarms/\(Fixtures.timerID.uuidString)/pause", method: .post, headers: headers) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/api/groups/house/alarms/\(Fixtures.alarmID.uuidString)/stop", method: .post, headers: headers) {
                #expect($0.status == .notFound)
            }
            // Without the token, nothing reaches the group.
            try await client.execute(uri: "/api/groups/house/alarms/\(Fixtures.timerID.uuidString)/cancel", method: .post,
                                     headers: [.origin: "http://localhost"]) { #expect($0.status == .forbidden) }
        }
        #expect(control.recorded == [.init(operation: "pause", node: "group house", target: Fixtures.timerID.uuidString)])
    }

    @Test func aGroupsActionSucceedsWhenAMemberAppliedItElseSaysWhoRefusedAndWhy() throws {
        let refusal = NodeReply.failure(NodeFailure(code: .invalidState, message: "stop needs an alarm in state alerting"))
        let applied = NodeReply.alarm(nil)
        try FleetControl.check(.init(answered: [.init(node: "attic", reply: refusal), .init(node: "kitchen", reply: applied)], silent: [:]), group: "house")
        let refused = #expect(throws: CompanionError.self) {
            try FleetControl.check(.init(answered: [.init(node: "attic", reply: refusal)], silent: [:]), group: "house")
        }
        #expect(refused?.code == "invalidState" && refused?.status == .conflict)
        #expect(refused?.message == "attic: stop needs an alarm in state alerting")
        let silent = #expect(throws: CompanionError.self) {
            try FleetControl.check(.init(answered: [], silent: [:]), group: "house")
        }
        #expect(silent?.status == .serviceUnavailable && silent?.message.contains("group 'house'") == true)
    }
}
