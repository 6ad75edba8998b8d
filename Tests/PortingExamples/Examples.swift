// The examples of docs/porting.md. Each block between `// example:` and `// end` appears in the
// document verbatim (PortingDocTests checks it), so the document always compiles.
// example: imports
import AlarmKit
import Foundation
// end

// example: buttons
extension AlarmButton {
    static var repeatButton: Self {
        AlarmButton(text: "Repeat", textColor: .white, systemImageName: "repeat.circle")
    }
    static var pauseButton: Self {
        AlarmButton(text: "Pause", textColor: .green, systemImageName: "pause")
    }
    static var resumeButton: Self {
        AlarmButton(text: "Resume", textColor: .green, systemImageName: "play")
    }
    static var snoozeButton: Self {
        AlarmButton(text: "Snooze", textColor: .white, systemImageName: "zzz")
    }
    static var lightsButton: Self {
        AlarmButton(text: "Lights", textColor: .yellow, systemImageName: "lightbulb")
    }
}
// end

// example: cooking-timer
struct CookingData: AlarmMetadata {
    enum Method: String, Codable { case frying, grilling }
    let method: Method
}

typealias AlarmConfiguration = AlarmManager.AlarmConfiguration<CookingData>

func scheduleCookingTimer(with alarmManager: AlarmManager) async throws -> Alarm {
    let id = UUID()
    let alertContent = AlarmPresentation.Alert(
        title: "Food Ready!",
        secondaryButton: .repeatButton,
        secondaryButtonBehavior: .countdown)
    let countdownContent = AlarmPresentation.Countdown(title: "Cooking", pauseButton: .pauseButton)
    let pausedContent = AlarmPresentation.Paused(title: "Paused", resumeButton: .resumeButton)
    let attributes = AlarmAttributes(
        presentation: AlarmPresentation(alert: alertContent, countdown: countdownContent, paused: pausedContent),
        metadata: CookingData(method: .frying),
        tintColor: Color.green)
    let countdownDuration = Alarm.CountdownDuration(preAlert: 10 * 60, postAlert: 5 * 60)
    let alarmConfiguration = AlarmConfiguration(countdownDuration: countdownDuration, attributes: attributes)
    return try await alarmManager.schedule(id: id, configuration: alarmConfiguration)
}
// end

// example: weekly-alarm
struct WakeUpData: AlarmMetadata {}

func scheduleWeekdayAlarm(with alarmManager: AlarmManager) async throws -> Alarm {
    let time = Alarm.Schedule.Relative.Time(hour: 7, minute: 0)
    let recurrence = Alarm.Schedule.Relative.Recurrence.weekly([.monday, .wednesday, .friday])
    let schedule = Alarm.Schedule.relative(.init(time: time, repeats: recurrence))
    let alert = AlarmPresentation.Alert(
        title: "Wake Up",
        secondaryButton: .snoozeButton,
        secondaryButtonBehavior: .countdown)
    let attributes = AlarmAttributes<WakeUpData>(presentation: AlarmPresentation(alert: alert), tintColor: .blue)
    let configuration = AlarmManager.AlarmConfiguration(
        countdownDuration: Alarm.CountdownDuration(preAlert: nil, postAlert: 9 * 60),
        schedule: schedule,
        attributes: attributes,
        sound: .named("gentle"))
    return try await alarmManager.schedule(id: UUID(), configuration: configuration)
}
// end

// example: fixed-date
func scheduleChristmasEve(with alarmManager: AlarmManager) async throws -> Alarm {
    var components = DateComponents(year: 2026, month: 12, day: 24, hour: 18, minute: 0)
    components.timeZone = TimeZone(identifier: "Europe/Berlin")
    let date = Calendar(identifier: .gregorian).date(from: components)!
    let alert = AlarmPresentation.Alert(title: "Presents!")
    let attributes = AlarmAttributes<WakeUpData>(presentation: AlarmPresentation(alert: alert), tintColor: .red)
    let configuration = AlarmManager.AlarmConfiguration.alarm(schedule: .fixed(date), attributes: attributes)
    return try await alarmManager.schedule(id: UUID(), configuration: configuration)
}
// end

// example: custom-button
func scheduleAlarmWithLights(with alarmManager: AlarmManager) async throws -> Alarm {
    let id = UUID()
    let alert = AlarmPresentation.Alert(
        title: "Good Morning",
        secondaryButton: .lightsButton,
        secondaryButtonBehavior: .custom)
    let attributes = AlarmAttributes<WakeUpData>(presentation: AlarmPresentation(alert: alert), tintColor: .orange)
    let configuration = AlarmManager.AlarmConfiguration.alarm(
        schedule: .relative(.init(time: .init(hour: 6, minute: 30))),
        attributes: attributes,
        secondaryIntent: .publish(topic: "home/bedroom/lights/set", payload: "ON"))
    return try await alarmManager.schedule(id: id, configuration: configuration)
}
// end

// example: observe
func watchAlarms(with alarmManager: AlarmManager) async {
    for await alarms in alarmManager.alarmUpdates {
        for alarm in alarms where alarm.state == .alerting {
            print("alerting:", alarm.id)
        }
    }
}

func firstAlerting(in updates: AlarmManager.AlarmUpdates) async -> Alarm? {
    for await alarms in updates {
        if let alarm = alarms.first(where: { $0.state == .alerting }) {
            return alarm
        }
    }
    return nil
}
// end

// example: widget
func countdownLine(attributes: AlarmAttributes<CookingData>,
                   state: AlarmAttributes<CookingData>.ContentState, now: Date) -> String {
    let presentation = attributes.presentation
    switch state.mode {
    case .countdown(let countdown):
        let left = countdown.fireDate.timeIntervalSince(now)
        return "\(presentation.countdown?.title ?? presentation.alert.title): \(Int(left.rounded(.up))) s left"
    case .paused(let paused):
        let left = paused.totalCountdownDuration - paused.previouslyElapsedDuration
        return "\(presentation.paused?.title ?? "Paused"): \(Int(left.rounded(.up))) s left"
    case .alert:
        return presentation.alert.title
    }
}
// end

// example: authorization
func ensureAuthorized(with alarmManager: AlarmManager) async throws -> Bool {
    switch alarmManager.authorizationState {
    case .notDetermined:
        return try await alarmManager.requestAuthorization() == .authorized
    case .denied:
        return false
    case .authorized:
        return true
    }
}
// end

// example: errors
func explain(_ error: AlarmManager.AlarmError) -> String {
    switch error {
    case .maximumLimitReached:
        return "Too many alarms: delete one first."
    }
}

func scheduleOrExplain(with alarmManager: AlarmManager) async -> String {
    do {
        _ = try await scheduleCookingTimer(with: alarmManager)
        return "Scheduled."
    } catch let error as AlarmManager.AlarmError {
        return explain(error)
    } catch let error as AlarmNodeError {
        return "\(error.code): \(error.message)"
    } catch {
        return "\(error)"
    }
}
// end
