import CompanionCore
import Foundation
import Testing

@Suite struct RequestTests {
    let nodes: [String: KnownNode]

    init() throws {
        nodes = ["kitchen": Fixtures.online([try Fixtures.runningTimer()]), "attic": Fixtures.offline([try Fixtures.pausedTimer()])]
    }

    @Test func aKnownAlarmOfAnOnlineNodeIsAccepted() throws {
        let action = try CompanionRequests.alarmAction(
            node: "kitchen", alarm: Fixtures.timerID.uuidString.lowercased(), action: "snooze", nodes: nodes)
        #expect(action.alarmID == Fixtures.timerID)
        #expect(action.action.operation == .countdown)
    }

    @Test func unknownNodeAlarmActionAndMalformedIdsAreRefused() {
        #expect(throws: CompanionError.unknownNode("garage")) {
            try CompanionRequests.alarmAction(node: "garage", alarm: Fixtures.timerID.uuidString, action: "stop", nodes: nodes)
        }
        #expect(throws: CompanionError.unknownAlarm(Fixtures.alarmID.uuidString, node: "kitchen")) {
            try CompanionRequests.alarmAction(node: "kitchen", alarm: Fixtures.alarmID.uuidString, action: "stop", nodes: nodes)
        }
        let badID = #expect(throws: CompanionError.self) {
            try CompanionRequests.alarmAction(node: "kitchen", alarm: "not-a-uuid", action: "stop", nodes: nodes)
        }
        #expect(badID?.status == .badRequest)
        #expect(badID?.message.contains("not an alarm id") == true)
        let badAction = #expect(throws: CompanionError.self) {
            try CompanionRequests.alarmAction(node: "kitchen", alarm: Fixtures.timerID.uuidString, action: "explode", nodes: nodes)
        }
        #expect(badAction?.message.contains("stop, snooze, pause, resume, cancel") == true)
    }

    @Test func anOfflineNodeIsRefusedBeforeAnythingIsSent() {
        let error = #expect(throws: CompanionError.self) {
            try CompanionRequests.alarmAction(node: "attic", alarm: Fixtures.timerID.uuidString, action: "resume", nodes: nodes)
        }
        #expect(error?.status == .serviceUnavailable)
        #expect(error?.message.contains("offline") == true)
    }

    @Test func withTheBrokerLostAnOnlineNodeIsRefusedBeforeAnythingIsSent() throws {
        var kitchen = try #require(nodes["kitchen"])
        kitchen.brokerLost = true
        let error = #expect(throws: CompanionError.self) {
            try CompanionRequests.alarmAction(node: "kitchen", alarm: Fixtures.timerID.uuidString, action: "pause", nodes: ["kitchen": kitchen])
        }
        #expect(error?.status == .serviceUnavailable)
        #expect(error?.message.contains("lost its connection to the broker") == true)
        let textError = #expect(throws: CompanionError.self) {
            try CompanionRequests.newAlarmText(node: "kitchen", body: Data("text=10m".utf8), contentType: "application/x-www-form-urlencoded",
                                               nodes: ["kitchen": kitchen])
        }
        #expect(textError == error)
    }

    @Test func aNewAlarmsTextComesFromAFormOrJSON() throws {
        #expect(try CompanionRequests.newAlarmText(
            node: "kitchen", body: Data("text=10m+Tea%21".utf8), contentType: "application/x-www-form-urlencoded", nodes: nodes) == "10m Tea!")
        #expect(try CompanionRequests.newAlarmText(
            node: "kitchen", body: Data(#"{"text":" 07:00 weekdays Work "}"#.utf8), contentType: "application/json; charset=utf-8",
            nodes: nodes) == "07:00 weekdays Work")
    }

    @Test func aNewAlarmWithoutTextOrInAnUnknownFormIsRefused() {
        for (body, type) in [("text=", "application/x-www-form-urlencoded"), ("[1]", "application/json"),
                             ("text=%zz", "application/x-www-form-urlencoded"), ("text=10m", "text/plain")] {
            let error = #expect(throws: CompanionError.self) {
                try CompanionRequests.newAlarmText(node: "kitchen", body: Data(body.utf8), contentType: type, nodes: nodes)
            }
            #expect(error?.status == .badRequest, "\(body) as \(type)")
        }
    }

    @Test func theNodesRefusalKeepsItsWords() {
        let error = CompanionError(node: NodeFailureSample.invalidState)
        #expect(error.code == "invalidState")
        #expect(error.status == .conflict)
        #expect(error.message == NodeFailureSample.invalidState.message)
    }
}

import AlarmKit

enum NodeFailureSample {
    static let invalidState = NodeFailure(code: .invalidState, message: "alarm is countdown, not alerting: stop needs an alerting alarm")
}

@Suite struct NewAlarmTextTests {
    @Test func aTimerAndAWeeklyAlarmReadAsAlarmctlReadsThem() throws {
        let timer = try NewAlarmText.configuration("10m Tea", timeZone: TimeZone(identifier: "Europe/Berlin")!)
        #expect(timer.countdownDuration?.preAlert == 600)
        #expect(timer.schedule == nil)
        #expect(timer.attributes.presentation.alert.title == "Tea")
        let alarm = try NewAlarmText.configuration("07:00 weekdays Work", timeZone: TimeZone(identifier: "Europe/Berlin")!)
        guard case .relative(let relative)? = alarm.schedule else {
            Issue.record("not a time of day: \(String(describing: alarm.schedule))")
            return
        }
        #expect(relative.time == .init(hour: 7, minute: 0))
        #expect(WeekdayList.describe(relative.repeats) == "weekdays")
        #expect(alarm.attributes.presentation.alert.title == "Work")
    }

    @Test func anUnreadableLineSaysWhatItTakes() {
        let error = #expect(throws: CompanionError.self) {
            try NewAlarmText.configuration("tea in ten", timeZone: .gmt)
        }
        #expect(error?.status == .badRequest)
        #expect(error?.code == "unreadable")
        #expect(error?.message.contains("10m") == true)
    }
}
