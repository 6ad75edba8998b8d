import AlarmKit
@testable import CompanionCore
import Foundation
import Testing

@Suite struct SnapshotTests {
    @Test func countdownShowsItsTitleDatesPauseButtonAndTint() throws {
        let view = try #require(CompanionSnapshot(nodes: ["kitchen": Fixtures.online([Fixtures.runningTimer()])], now: Fixtures.now)
            .nodes.first?.alarms.first)
        #expect(view.state == "countdown")
        #expect(view.title == "Tea")
        #expect(view.tint == Color.orange.hex)
        #expect(view.countdown?.fireDate == "2026-11-22T07:04:32.000Z")
        #expect(view.countdown?.total == 600)
        #expect(view.buttons.map(\.action) == [.pause, .cancel])
        #expect(view.buttons.first?.text == "Pause")
        #expect(!view.stale)
    }

    @Test func pausedShowsTheRemainingTimeAndTheResumeButton() throws {
        let view = try #require(CompanionSnapshot(nodes: ["kitchen": Fixtures.online([Fixtures.pausedTimer()])], now: Fixtures.now)
            .nodes.first?.alarms.first)
        #expect(view.state == "paused")
        #expect(view.countdown?.fireDate == nil)
        #expect(view.countdown.map { $0.total - $0.elapsed } == 600)
        #expect(view.buttons.map(\.action) == [.resume, .cancel])
        #expect(view.buttons.first?.text == "Resume")
    }

    @Test func alertShowsStopAndSnoozeInTheirTextsAndColours() throws {
        let view = try #require(CompanionSnapshot(nodes: ["bedroom": Fixtures.online([Fixtures.alertingAlarm()])], now: Fixtures.now)
            .nodes.first?.alarms.first)
        #expect(view.state == "alerting")
        #expect(view.title == "Nap over")
        #expect(view.buttons.map(\.action) == [.stop, .snooze])
        #expect(view.buttons.map(\.text) == ["Stop", "Snooze"])
        #expect(view.buttons.first?.textColor == Color.white.hex)
    }

    @Test func aCustomSecondaryButtonIsShownButOnlyTheNodeRunsIt() throws {
        let view = try #require(CompanionSnapshot(
            nodes: ["bedroom": Fixtures.online([Fixtures.alertingAlarm(secondary: .custom)])], now: Fixtures.now).nodes.first?.alarms.first)
        #expect(view.buttons.map(\.action) == [.stop, nil])
    }

    @Test func scheduledShowsTheNextAlertInTheNodesTimeZoneAndItsDays() throws {
        let view = try #require(CompanionSnapshot(nodes: ["bedroom": Fixtures.online([Fixtures.weeklyAlarm()])], now: Fixtures.now)
            .nodes.first?.alarms.first)
        #expect(view.nextAlert == "tomorrow 07:00")
        #expect(view.repeats == "mon,wed,fri")
        #expect(view.buttons.map(\.action) == [.cancel])
    }

    @Test func anOfflineNodeHasStaleAlarmsWithoutButtons() throws {
        let node = try #require(CompanionSnapshot(nodes: ["attic": Fixtures.offline([Fixtures.runningTimer()])], now: Fixtures.now).nodes.first)
        #expect(node.state == "offline")
        #expect(node.stateText.hasPrefix("offline since"))
        // The alarm is still shown (an empty list would satisfy the check below as well), stale.
        #expect(node.alarms.count == 1)
        #expect(node.alarms.allSatisfy { $0.stale && $0.buttons.isEmpty })
    }

    @Test func nodesAreInIdOrderWithTheirStatus() {
        let snapshot = CompanionSnapshot(nodes: ["b": Fixtures.online([]), "a": KnownNode()], now: Fixtures.now)
        #expect(snapshot.nodes.map(\.id) == ["a", "b"])
        #expect(snapshot.nodes.map(\.state) == ["unknown", "online"])
        #expect(snapshot.nodes[0].stateText == "no status yet: if this lasts, check the id (--node) and that alarmd runs on this broker")
        #expect(snapshot.nodes[1].timeZone == "Europe/Berlin")
        #expect(snapshot.nodes[1].clockSynchronized == true)
        #expect(snapshot.serverTime == "2026-11-22T07:00:00.000Z")
    }

    @Test func theSnapshotIsJSONWithISODates() throws {
        let snapshot = CompanionSnapshot(nodes: ["kitchen": Fixtures.online([try Fixtures.runningTimer()])], now: Fixtures.now)
        let text = String(decoding: try AlarmJSON.encoder.encode(snapshot), as: UTF8.self)
        #expect(text.contains("\"serverTime\":\"2026-11-22T07:00:00.000Z\""))
        #expect(text.contains("\"fireDate\":\"2026-11-22T07:04:32.000Z\""))
    }

    @Test func theHubKeepsEachNodesStatusAndAlarmsTogether() async throws {
        let hub = CompanionHub()
        hub.add(node: "attic")
        hub.update(node: "kitchen", status: NodeStatus(state: "online"))
        hub.update(node: "kitchen", documents: [try Fixtures.runningTimer()])
        var changes = hub.nodes.stream().makeAsyncIterator()
        let nodes = await changes.next()
        #expect(nodes?["attic"] == KnownNode())
        #expect(nodes?["kitchen"]?.status?.isOnline == true)
        #expect(nodes?["kitchen"]?.documents.map(\.id) == [Fixtures.timerID])
        hub.finish()
        #expect(await changes.next() == nil)
    }

    @Test func whatRangUnansweredOrWasMissedIsShownForHalfADayByTitleEvenOnceRemoved() throws {
        let hub = CompanionHub()
        hub.update(node: "attic", status: NodeStatus(state: "online", since: Fixtures.now, timeZone: "Europe/Berlin"))
        hub.update(node: "attic", documents: [try Fixtures.runningTimer()])
        hub.update(node: "attic", documents: [])
        // The timer rang unanswered, was silenced and removed before its event came.
        hub.record(node: "attic", event: AlarmEvent(.silenced, alarmID: Fixtures.timerID, at: Fixtures.now))
        hub.record(node: "attic", event: AlarmEvent(.stopped, alarmID: Fixtures.timerID, at: Fixtures.now))
        // One the companion never saw is named by its event; an event without a title (an older alarmd's) is "An alarm".
        hub.record(node: "attic", event: AlarmEvent(.missed, alarmID: UUID(uuidString: "0DD00000-1111-4222-8333-444455556666"), at: Fixtures.now.addingTimeInterval(30),
                                                      details: ["alertDate": .string("2026-11-22T05:30:00.000Z"), "title": .string("Work")]))
        hub.record(node: "attic", event: AlarmEvent(.missed, alarmID: Fixtures.alarmID, at: Fixtures.now.addingTimeInterval(60),
                                                      details: ["alertDate": .string("2026-11-22T06:00:00.000Z")]))
        let node = { (now: Date) in try #require(CompanionSnapshot(nodes: hub.nodes.value, now: now).nodes.first) }
        #expect(try node(Fixtures.now.addingTimeInterval(120)).unanswered
            == ["An alarm was missed, today 07:00", "Work was missed, today 06:30", "Tea rang unanswered, today 08:00"])
        #expect(try node(Fixtures.now.addingTimeInterval(12 * 3600)).unanswered.isEmpty, "half a day later it is gone")
    }
}

@Suite struct OfflineTimeZoneTests {
    @Test func anOfflineStatusKeepsTheNodesTimeZone() throws {
        let hub = CompanionHub()
        hub.update(node: "attic", status: NodeStatus(state: "online", since: Fixtures.now, timeZone: "Europe/Berlin"))
        hub.update(node: "attic", status: .offline(since: Fixtures.now.addingTimeInterval(125)))
        let node = try #require(CompanionSnapshot(nodes: hub.nodes.value, now: Fixtures.now.addingTimeInterval(130)).nodes.first)
        #expect(node.timeZone == "Europe/Berlin")
        #expect(node.stateText == "offline since today 08:02")
    }

    @Test func aWillSaysTheConnectionWasLostNotWhen() throws {
        let hub = CompanionHub()
        hub.update(node: "attic", status: NodeStatus(state: "online", since: Fixtures.now, timeZone: "Europe/Berlin"))
        hub.update(node: "attic", status: .will(lastOnline: Fixtures.now))
        let node = try #require(CompanionSnapshot(nodes: hub.nodes.value, now: Fixtures.now.addingTimeInterval(3600)).nodes.first)
        #expect(node.stateText == "offline: connection lost (online since today 08:00)")
    }
}

@Suite struct BrokerLostTests {
    @Test func whileTheCompanionCannotReachTheBrokerEveryNodeIsUnknownAndStale() throws {
        let hub = CompanionHub()
        hub.update(node: "kitchen", status: NodeStatus(state: "online", timeZone: "Europe/Berlin"))
        hub.update(node: "kitchen", documents: [try Fixtures.runningTimer()])
        hub.update(brokerConnected: false)
        hub.add(node: "attic")
        let lost = CompanionSnapshot(nodes: hub.nodes.value, now: Fixtures.now)
        #expect(lost.nodes.map(\.state) == ["unknown", "unknown"])
        #expect(lost.nodes[1].stateText.contains("cannot reach the broker"))
        // The kitchen's timer is still shown (an empty list would satisfy the check below as well), stale.
        #expect(lost.nodes[1].alarms.count == 1)
        #expect(lost.nodes[1].alarms.allSatisfy { $0.stale && $0.buttons.isEmpty })
        hub.update(brokerConnected: true)
        let back = CompanionSnapshot(nodes: hub.nodes.value, now: Fixtures.now)
        #expect(back.nodes.first { $0.id == "kitchen" }?.state == "online")
        #expect(back.nodes.first { $0.id == "kitchen" }?.alarms.first?.stale == false)
    }

    @Test func aBrokerNeverReachedIsNamedThoughNoNodeIsKnown() {
        let hub = CompanionHub(broker: "127.0.0.1:1")
        #expect(hub.brokerProblem.value == nil)
        hub.update(brokerConnected: false)
        let problem = hub.brokerProblem.value
        #expect(problem == "the companion cannot reach the broker 127.0.0.1:1: check that it runs and that --broker (or ALARMD_BROKER) names it")
        #expect(CompanionSnapshot(nodes: hub.nodes.value, broker: problem, now: Fixtures.now).broker == problem)
        hub.update(brokerConnected: true)
        #expect(hub.brokerProblem.value == nil)
    }
}
