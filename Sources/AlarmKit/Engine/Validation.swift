import FoundationEssentials

/// The limits of docs/mqtt.md on what an alarm may hold.
public enum AlarmLimits {
    /// Countdown durations, in seconds: 1 s to 7 days.
    public static let durations: ClosedRange<TimeInterval> = 1...604_800
    /// Titles and button texts, in UTF-8 bytes.
    public static let textBytes: ClosedRange<Int> = 1...128
    /// Metadata, as compact JSON, in bytes.
    public static let metadataBytes = 4096
    /// A command's payload, in bytes.
    public static let commandPayloadBytes = 65_536
}

extension AlarmManager.AlarmConfiguration where Metadata == JSONValue {
    /// Checks the configuration against the limits of docs/mqtt.md, naming the first offending field.
    ///
    /// - Parameter now: schedules whose fixed date is not after `now` are refused.
    public func validate(now: Date) throws(AlarmNodeError) {
        func fail(_ field: String, _ reason: String) -> AlarmNodeError {
            .invalidConfiguration(field: "configuration.\(field)", reason: reason)
        }
        func checkDuration(_ value: TimeInterval?, _ field: String) throws(AlarmNodeError) {
            guard let value else { return }
            guard value.isFinite, AlarmLimits.durations.contains(value) else {
                throw fail(field, "\(value) is not a duration from 1 to 604800 seconds (7 days)")
            }
        }
        func checkText(_ text: String, _ field: String) throws(AlarmNodeError) {
            guard AlarmLimits.textBytes.contains(text.utf8.count) else {
                throw fail(field, "must be 1 to 128 UTF-8 bytes, is \(text.utf8.count)")
            }
        }
        func checkButton(_ button: AlarmButton?, _ field: String) throws(AlarmNodeError) {
            guard let button else { return }
            try checkText(button.text, "\(field).text")
            guard button.systemImageName.utf8.count <= 128 else {
                throw fail("\(field).systemImageName", "must be at most 128 UTF-8 bytes")
            }
        }
        func checkIntent(_ intent: AlarmIntent?, _ field: String) throws(AlarmNodeError) {
            guard case .publish(let topic, let payload, _)? = intent else { return }
            guard NodeTopics.isTopicName(topic, maxBytes: 1024) else {
                throw fail("\(field).publish.topic", "must be a non-empty MQTT topic of at most 1024 bytes without wildcards or U+0000")
            }
            guard payload.utf8.count <= AlarmLimits.commandPayloadBytes else {
                throw fail("\(field).publish.payload", "must be at most 65536 bytes")
            }
        }

        try checkDuration(countdownDuration?.preAlert, "countdownDuration.preAlert")
        try checkDuration(countdownDuration?.postAlert, "countdownDuration.postAlert")

        switch schedule {
        case nil:
            guard countdownDuration?.preAlert != nil else {
                throw fail("countdownDuration.preAlert",
                           "an alarm with no schedule is a timer and needs a preAlert duration; or give it a schedule")
            }
        case .fixed(let date)?:
            guard date > now else {
                throw fail("schedule.fixed", "\(AlarmJSON.string(from: date)) is not in the future (now is \(AlarmJSON.string(from: now)))")
            }
        case .relative(let relative)?:
            guard (0...23).contains(relative.time.hour) else {
                throw fail("schedule.relative.time.hour", "\(relative.time.hour) is not an hour from 0 to 23")
            }
            guard (0...59).contains(relative.time.minute) else {
                throw fail("schedule.relative.time.minute", "\(relative.time.minute) is not a minute from 0 to 59")
            }
            if case .weekly(let days) = relative.repeats, days.isEmpty {
                throw fail("schedule.relative.repeats.weekly", "name at least one weekday, or use \"never\"")
            }
        }

        let presentation = attributes.presentation
        try checkText(presentation.alert.title, "attributes.presentation.alert.title")
        try checkButton(presentation.alert.stopButton, "attributes.presentation.alert.stopButton")
        try checkButton(presentation.alert.secondaryButton, "attributes.presentation.alert.secondaryButton")
        switch (presentation.alert.secondaryButton, presentation.alert.secondaryButtonBehavior) {
        case (nil, _?):
            throw fail("attributes.presentation.alert.secondaryButton", "is required when secondaryButtonBehavior is set")
        case (_?, nil):
            throw fail("attributes.presentation.alert.secondaryButtonBehavior",
                       "is required with a secondaryButton: \"countdown\" or \"custom\"")
        case (_?, .countdown?) where snoozeDuration == nil:
            throw fail("attributes.presentation.alert.secondaryButtonBehavior",
                       "\"countdown\" needs countdownDuration.postAlert or preAlert")
        default:
            break
        }
        if let countdown = presentation.countdown {
            try checkText(countdown.title, "attributes.presentation.countdown.title")
            try checkButton(countdown.pauseButton, "attributes.presentation.countdown.pauseButton")
        }
        if let paused = presentation.paused {
            try checkText(paused.title, "attributes.presentation.paused.title")
            try checkButton(paused.resumeButton, "attributes.presentation.paused.resumeButton")
        }
        if let metadata = attributes.metadata {
            guard case .object = metadata else { throw fail("attributes.metadata", "must be a JSON object") }
            guard metadata.encodedByteCount <= AlarmLimits.metadataBytes else {
                throw fail("attributes.metadata", "must be at most 4096 bytes as JSON, is \(metadata.encodedByteCount)")
            }
        }
        if case .named(let name) = sound, name.isEmpty || name.utf8.count > 64 { throw fail("sound.named", "must be 1 to 64 bytes") }
        try checkIntent(stopIntent, "stopIntent")
        try checkIntent(secondaryIntent, "secondaryIntent")
    }

    /// The countdown length used by snooze: `postAlert`, or `preAlert` when it is nil.
    var snoozeDuration: TimeInterval? { countdownDuration?.postAlert ?? countdownDuration?.preAlert }
}
