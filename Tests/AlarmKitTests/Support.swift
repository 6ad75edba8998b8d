import Foundation
@testable import AlarmKit

/// An instant written as ISO 8601, for readable tests.
func date(_ text: String) -> Date {
    guard let date = AlarmJSON.date(from: text) else { preconditionFailure("bad test date \(text)") }
    return date
}

func zone(_ identifier: String) -> TimeZone {
    guard let zone = TimeZone(identifier: identifier) else { preconditionFailure("unknown zone \(identifier)") }
    return zone
}

let dismiss = AlarmButton(text: "Dismiss", textColor: .white, systemImageName: "stop.circle")
let snoozeButton = AlarmButton(text: "Snooze", textColor: .white, systemImageName: "zzz")

/// A configuration with only what a test cares about.
func configuration(
    schedule: Alarm.Schedule? = nil, preAlert: TimeInterval? = nil, postAlert: TimeInterval? = nil,
    secondary: AlarmPresentation.Alert.SecondaryButtonBehavior? = nil, title: String = "Wake up",
    stopIntent: AlarmIntent? = nil, secondaryIntent: AlarmIntent? = nil, sound: AlertConfiguration.AlertSound = .default
) -> AlarmManager.AlarmConfiguration<JSONValue> {
    let alert = AlarmPresentation.Alert(
        title: title, stopButton: dismiss,
        secondaryButton: secondary == nil ? nil : snoozeButton, secondaryButtonBehavior: secondary)
    let countdown: Alarm.CountdownDuration? = preAlert == nil && postAlert == nil
        ? nil : .init(preAlert: preAlert, postAlert: postAlert)
    return .init(countdownDuration: countdown, schedule: schedule,
                 attributes: .init(presentation: AlarmPresentation(alert: alert), tintColor: .blue),
                 stopIntent: stopIntent, secondaryIntent: secondaryIntent, sound: sound)
}

func weekly(_ hour: Int, _ minute: Int, _ days: [Locale.Weekday]) -> Alarm.Schedule {
    .relative(.init(time: .init(hour: hour, minute: minute), repeats: .weekly(days)))
}

func once(_ hour: Int, _ minute: Int) -> Alarm.Schedule {
    .relative(.init(time: .init(hour: hour, minute: minute)))
}

extension Array where Element == AlarmEffect {
    /// The names of the events among the effects, in order.
    var eventNames: [AlarmEvent.Name] {
        compactMap { if case .event(let event) = $0 { event.name } else { nil } }
    }

    func event(_ name: AlarmEvent.Name) -> AlarmEvent? {
        lazy.compactMap { if case .event(let event) = $0, event.name == name { event } else { nil } }.first
    }

    var removedIDs: [UUID] {
        compactMap { if case .removed(let id) = $0 { id } else { nil } }
    }
}
