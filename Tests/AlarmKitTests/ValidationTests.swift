import Foundation
import Testing
@testable import AlarmKit

@Suite("Validation and limits")
struct ValidationTests {
    let now = date("2026-11-22T10:00:00Z")

    private func field(of configuration: AlarmManager.AlarmConfiguration<JSONValue>) -> String? {
        do {
            try configuration.validate(now: now)
            return nil
        } catch {
            #expect(error.code == .invalidConfiguration)
            return error.field
        }
    }

    @Test("Durations must be 1 s to 7 days and finite", arguments: [0, 0.5, 604_801, .nan, .infinity, -5])
    func durations(value: Double) {
        #expect(field(of: configuration(preAlert: value)) == "configuration.countdownDuration.preAlert")
        #expect(field(of: configuration(preAlert: 60, postAlert: value)) == "configuration.countdownDuration.postAlert")
    }

    @Test("The extreme durations are accepted", arguments: [1.0, 604_800])
    func durationBounds(value: Double) {
        #expect(field(of: configuration(preAlert: value)) == nil)
    }

    @Test("Titles and button texts are 1 to 128 UTF-8 bytes")
    func texts() {
        #expect(field(of: configuration(preAlert: 60, title: "")) == "configuration.attributes.presentation.alert.title")
        #expect(field(of: configuration(preAlert: 60, title: String(repeating: "é", count: 65))) == "configuration.attributes.presentation.alert.title")
        #expect(field(of: configuration(preAlert: 60, title: String(repeating: "é", count: 64))) == nil)
        var config = configuration(preAlert: 60)
        config.attributes.presentation.alert.stopButton.text = ""
        #expect(field(of: config) == "configuration.attributes.presentation.alert.stopButton.text")
        config = configuration(preAlert: 60)
        config.attributes.presentation.countdown = .init(title: String(repeating: "x", count: 129))
        #expect(field(of: config) == "configuration.attributes.presentation.countdown.title")
    }

    @Test("Metadata is a JSON object of at most 4 KiB")
    func metadata() {
        var config = configuration(preAlert: 60)
        config.attributes.metadata = .object(["note": .string(String(repeating: "x", count: 4000))])
        #expect(field(of: config) == nil)
        config.attributes.metadata = .object(["note": .string(String(repeating: "x", count: 4100))])
        #expect(field(of: config) == "configuration.attributes.metadata")
        config.attributes.metadata = .array([])
        #expect(field(of: config) == "configuration.attributes.metadata")
    }

    @Test("Relative schedules need a real time and at least one weekday")
    func relative() {
        #expect(field(of: configuration(schedule: once(24, 0))) == "configuration.schedule.relative.time.hour")
        #expect(field(of: configuration(schedule: once(7, 60))) == "configuration.schedule.relative.time.minute")
        #expect(field(of: configuration(schedule: weekly(7, 0, []))) == "configuration.schedule.relative.repeats.weekly")
    }

    @Test("A secondary button comes with its behaviour, and .countdown needs a duration")
    func secondary() {
        var config = configuration(preAlert: 60)
        config.attributes.presentation.alert.secondaryButton = snoozeButton
        #expect(field(of: config) == "configuration.attributes.presentation.alert.secondaryButtonBehavior")
        #expect(field(of: configuration(schedule: once(7, 0), secondary: .countdown))
            == "configuration.attributes.presentation.alert.secondaryButtonBehavior")
        #expect(field(of: configuration(schedule: once(7, 0), postAlert: 540, secondary: .countdown)) == nil)
    }

    @Test("Intents publish to a topic name: not empty, no wildcards, no U+0000", arguments: ["home/#", "", "alarmd/bedroom/intents/a\u{0}b"])
    func intents(topic: String) {
        #expect(field(of: configuration(preAlert: 60, stopIntent: .publish(topic: topic, payload: "x")))
            == "configuration.stopIntent.publish.topic")
    }

    @Test("Errors say what to do")
    func messages() {
        #expect(AlarmManager.AlarmError.maximumLimitReached.message.contains("max-alarms") && AlarmManager.AlarmError.maximumLimitReached.message.contains("maximumAlarms"))
        // An app shows localizedDescription: the message, not "The operation could not be completed".
        for error: any Error in [AlarmManager.AlarmError.maximumLimitReached, AlarmNodeError.notFound(UUID()), HumanSyntaxError.unreadable("10x is not a duration")] {
            #expect(error.localizedDescription == (error as? LocalizedError)?.errorDescription && !error.localizedDescription.contains("could not be completed"))
        }
        #expect(AlarmNodeError.unauthorized(.denied).message.contains("alarmd reset-authorization"))
        #expect(AlarmNodeError.unauthorized(.notDetermined).message.contains("stop button during the prompt"))
        let error = AlarmNodeError.invalidConfiguration(field: "configuration.schedule", reason: "never occurs")
        #expect(error.message == "configuration.schedule: never occurs")
        #expect(NodeFailure(code: error.code, message: error.message, field: error.field) == .node(error))
        #expect(NodeFailure(code: .maximumLimitReached, message: "full") == .alarmKit(.maximumLimitReached))
    }
}
