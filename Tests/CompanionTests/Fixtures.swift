import AlarmKit
import AlarmctlCore
@testable import CompanionCore
import Foundation
import Synchronization

/// Nodes and alarms at a fixed instant, and a node control that records what reaches it.
enum Fixtures {
    /// Sunday 22 November 2026, 08:00 in Berlin.
    static let now = AlarmJSON.date(from: "2026-11-22T07:00:00Z")!
    static let timerID = UUID(uuidString: "94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55")!
    static let alarmID = UUID(uuidString: "11643830-2570-481D-8226-0DC7D20DC2EA")!

    static func runningTimer(title: String = "Tea", total: TimeInterval = 600, remaining: TimeInterval = 272) throws -> AlarmDocument {
        let fireDate = now.addingTimeInterval(remaining)
        return AlarmDocument(
            id: timerID, state: .countdown,
            configuration: try AlarmRequest.timer(duration: total, title: title, snooze: nil, sound: nil),
            presentationState: .countdown(.init(totalCountdownDuration: total, previouslyElapsedDuration: total - remaining,
                                                startDate: now, fireDate: fireDate)),
            nextAlertDate: fireDate)
    }

    static func pausedTimer() throws -> AlarmDocument {
        AlarmDocument(
            id: timerID, state: .paused,
            configuration: try AlarmRequest.timer(duration: 900, title: "Pizza", snooze: nil, sound: nil),
            presentationState: .paused(.init(totalCountdownDuration: 900, previouslyElapsedDuration: 300)), nextAlertDate: nil)
    }

    static func weeklyAlarm() throws -> AlarmDocument {
        AlarmDocument(
            id: alarmID, state: .scheduled,
            configuration: try AlarmRequest.alarm(
                schedule: .relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday, .wednesday, .friday]))),
                title: "Wake up", snooze: 540, preAlert: nil, sound: nil, timeZone: .gmt),
            presentationState: nil, nextAlertDate: AlarmJSON.date(from: "2026-11-23T06:00:00Z"))
    }

    static func alertingAlarm(secondary: AlarmPresentation.Alert.SecondaryButtonBehavior = .countdown) throws -> AlarmDocument {
        var configuration = try AlarmRequest.alarm(
            schedule: .relative(.init(time: .init(hour: 7, minute: 55))), title: "Nap over", snooze: 540, preAlert: nil, sound: nil, timeZone: .gmt)
        configuration.attributes.presentation.alert.secondaryButtonBehavior = secondary
        return AlarmDocument(id: alarmID, state: .alerting, configuration: configuration,
                             presentationState: .alert(.init(time: .init(hour: 7, minute: 55))), nextAlertDate: nil)
    }

    /// `document` as scheduled through `group`.
    static func inGroup(_ group: String, _ document: AlarmDocument) -> AlarmDocument {
        var document = document
        document.group = group
        return document
    }

    static func online(_ documents: [AlarmDocument]) -> KnownNode {
        KnownNode(status: NodeStatus(state: "online", since: now.addingTimeInterval(-3600), timeZone: "Europe/Berlin",
                                     clockSynchronized: true), documents: documents)
    }

    static func offline(_ documents: [AlarmDocument]) -> KnownNode {
        KnownNode(status: .offline(since: now.addingTimeInterval(-60)), documents: documents)
    }
}

/// A node control that records the calls that reach it and answers with `failure` when set.
final class RecordingControl: NodeControl {
    struct Call: Equatable {
        var operation: String
        var node: String
        var target: String
    }

    let calls = Mutex<[Call]>([])
    let failure: CompanionError?

    init(failure: CompanionError? = nil) {
        self.failure = failure
    }

    var recorded: [Call] { calls.withLock { $0 } }

    func perform(_ operation: AlarmOperation, node: String, id: UUID) async throws(CompanionError) {
        calls.withLock { $0.append(Call(operation: operation.rawValue, node: node, target: id.uuidString)) }
        if let failure { throw failure }
    }

    func perform(_ operation: AlarmOperation, group: String, id: UUID) async throws(CompanionError) {
        calls.withLock { $0.append(Call(operation: operation.rawValue, node: "group \(group)", target: id.uuidString)) }
        if let failure { throw failure }
    }

    func schedule(_ text: String, node: String) async throws(CompanionError) {
        calls.withLock { $0.append(Call(operation: "schedule", node: node, target: text)) }
        if let failure { throw failure }
    }
}
