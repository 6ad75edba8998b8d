import FoundationEssentials

/// The configurations `alarmctl timer`, `alarmctl alarm` and Home Assistant's text entity send:
/// AlarmKit's timer and alarm factories, with buttons and titles a display or a watch can show.
public enum AlarmRequest {
    /// The snooze of an alarm when none is given: AlarmKit's (and the iPhone's) nine minutes.
    public static let defaultAlarmSnooze: TimeInterval = 9 * 60

    /// A timer of `duration` seconds that starts now. Its Repeat button (and `alarmctl snooze`)
    /// counts `snooze` seconds, or the same duration again when `snooze` is nil.
    public static func timer(
        duration: TimeInterval, title: String?, snooze: TimeInterval?, sound: String?
    ) throws(HumanSyntaxError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        try configuration(countdown: .init(preAlert: duration, postAlert: snooze), schedule: nil,
                          title: title ?? "Timer", secondaryButton: .repeatButton, tint: .orange, sound: sound)
    }

    /// An alarm on `schedule`. `snooze` nil means no Snooze button; `preAlert` starts a countdown
    /// that long before the alert. A fixed date that has passed is refused in `timeZone`'s words.
    public static func alarm(
        schedule: Alarm.Schedule, title: String?, snooze: TimeInterval?, preAlert: TimeInterval?, sound: String?, timeZone: TimeZone
    ) throws(HumanSyntaxError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        let now = Date()
        if case .fixed(let date) = schedule, date <= now {
            // The node's own check names UTC instants, where the person wrote a local time.
            // To the minute, unless the date is within it: "07:30 has passed (it is 07:30)" would puzzle.
            let shown = now.timeIntervalSince(date) < 60 ? now : Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
            throw .refused(part: .date, reason: "\(ScheduleMath.localText(of: date, in: timeZone)) has passed (it is \(ScheduleMath.localText(of: shown, in: timeZone)))")
        }
        let countdown = snooze == nil && preAlert == nil ? nil : Alarm.CountdownDuration(preAlert: preAlert, postAlert: snooze)
        return try configuration(countdown: countdown, schedule: schedule, title: title ?? "Alarm",
                                 secondaryButton: snooze == nil ? nil : .snoozeButton, tint: .blue, sound: sound)
    }

    /// The configuration with these titles and buttons, checked by the node's own checks (docs/mqtt.md,
    /// "Lifecycle") before sending, so that mistakes show early.
    private static func configuration(
        countdown: Alarm.CountdownDuration?, schedule: Alarm.Schedule?, title: String, secondaryButton: AlarmButton?, tint: Color,
        sound: String?
    ) throws(HumanSyntaxError) -> AlarmManager.AlarmConfiguration<JSONValue> {
        let alert = AlarmPresentation.Alert(
            title: title, secondaryButton: secondaryButton, secondaryButtonBehavior: secondaryButton == nil ? nil : .countdown)
        let presentation = AlarmPresentation(
            alert: alert,
            countdown: .init(title: title, pauseButton: .pauseButton),
            paused: .init(title: title, resumeButton: .resumeButton))
        let configuration = AlarmManager.AlarmConfiguration<JSONValue>(
            countdownDuration: countdown, schedule: schedule, attributes: AlarmAttributes(presentation: presentation, tintColor: tint),
            sound: sound.map { .named($0) } ?? .default)
        do {
            try configuration.validate(now: Date())
            return configuration
        } catch {
            switch error {
            case .invalidConfiguration(let field, let reason) where field.hasSuffix("title"):
                throw .refused(part: .title, reason: reason)
            case .invalidConfiguration(let field, let reason) where field.hasPrefix("configuration.schedule.fixed"):
                throw .refused(part: .date, reason: reason)
            case .invalidConfiguration(let field, let reason) where field == "configuration.sound.named":
                throw .refused(part: .sound, reason: reason)
            default:
                throw .refused(part: .configuration, reason: error.message)
            }
        }
    }
}

extension AlarmButton {
    fileprivate static let snoozeButton = AlarmButton(text: "Snooze", textColor: .white, systemImageName: "zzz")
    fileprivate static let repeatButton = AlarmButton(text: "Repeat", textColor: .white, systemImageName: "repeat")
    fileprivate static let pauseButton = AlarmButton(text: "Pause", textColor: .orange, systemImageName: "pause")
    fileprivate static let resumeButton = AlarmButton(text: "Resume", textColor: .orange, systemImageName: "play")
}
