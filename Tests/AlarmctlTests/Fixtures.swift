import AlarmKit
import AlarmctlCore
import Foundation

/// Alarm documents at a fixed instant, for the rendering and selection tests.
enum Fixtures {
    /// Sunday 22 November 2026, 08:00 in Berlin.
    static let now = AlarmJSON.date(from: "2026-11-22T07:00:00Z")!
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func id(_ text: String) -> UUID { UUID(uuidString: text)! }

    /// A timer of `total` seconds with `remaining` left.
    static func runningTimer(id: UUID, title: String, total: TimeInterval, remaining: TimeInterval) throws -> AlarmDocument {
        let fireDate = now.addingTimeInterval(remaining)
        return AlarmDocument(
            id: id, state: .countdown,
            configuration: try AlarmRequest.timer(duration: total, title: title, snooze: nil, sound: nil),
            presentationState: .countdown(.init(totalCountdownDuration: total, previouslyElapsedDuration: 0,
                                                startDate: fireDate.addingTimeInterval(-total), fireDate: fireDate)),
            nextAlertDate: fireDate)
    }

    static func pausedTimer(id: UUID, title: String, total: TimeInterval, elapsed: TimeInterval) throws -> AlarmDocument {
        AlarmDocument(
            id: id, state: .paused,
            configuration: try AlarmRequest.timer(duration: total, title: title, snooze: nil, sound: nil),
            presentationState: .paused(.init(totalCountdownDuration: total, previouslyElapsedDuration: elapsed)),
            nextAlertDate: nil)
    }

    static func scheduledAlarm(id: UUID, title: String, words: [String], nextAlert: String) throws -> AlarmDocument {
        AlarmDocument(
            id: id, state: .scheduled,
            configuration: try AlarmRequest.alarm(schedule: try ScheduleExpression.parse(words).schedule(in: berlin),
                                                  title: title, snooze: 540, preAlert: nil, sound: nil, timeZone: .gmt),
            presentationState: nil, nextAlertDate: AlarmJSON.date(from: nextAlert))
    }

    static func alertingAlarm(id: UUID, title: String) throws -> AlarmDocument {
        AlarmDocument(
            id: id, state: .alerting,
            configuration: try AlarmRequest.alarm(schedule: .relative(.init(time: .init(hour: 7, minute: 55))),
                                                  title: title, snooze: 540, preAlert: nil, sound: "gentle", timeZone: .gmt),
            presentationState: .alert(.init(time: .init(hour: 7, minute: 55))), nextAlertDate: nil)
    }

    /// One of each: an alerting alarm, a running and a paused timer, a weekly alarm and a fixed date.
    static func mixed() throws -> [AlarmDocument] {
        [
            try scheduledAlarm(id: id("11643830-2570-481D-8226-0DC7D20DC2EA"), title: "Wake up", words: ["07:00", "mon,wed,fri"],
                               nextAlert: "2026-11-23T06:00:00Z"),
            try runningTimer(id: id("94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55"), title: "Tea", total: 600, remaining: 272),
            try scheduledAlarm(id: id("5795D8CB-0000-4000-8000-000000000001"), title: "Presents", words: ["2036-12-24T18:00"],
                               nextAlert: "2036-12-24T17:00:00Z"),
            try pausedTimer(id: id("26B098AD-802B-483E-B317-5835B4248649"), title: "Pizza", total: 900, elapsed: 300),
            try alertingAlarm(id: id("7A7A0000-1111-4222-8333-444455556666"), title: "Nap over"),
        ]
    }
}

extension String {
    /// The text without ANSI escapes: what a terminal shows.
    var withoutEscapes: String {
        replacingOccurrences(of: "\u{1B}\\[[0-9;?]*[A-Za-z]", with: "", options: .regularExpression)
    }
}
