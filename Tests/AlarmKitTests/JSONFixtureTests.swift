import Foundation
import Testing
@testable import AlarmKit

@Suite("JSON of docs/mqtt.md")
struct JSONFixtureTests {
    static func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try Data(contentsOf: url)
    }

    /// Decodes a fixture, encodes it again, and compares the two as JSON values (key order aside).
    func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ name: String) throws -> T {
        let data = try Self.fixture(name)
        let value = try AlarmJSON.strictDecoder.decode(T.self, from: data)
        let encoded = try AlarmJSON.encoder.encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: encoded) == JSONDecoder().decode(JSONValue.self, from: data))
        #expect(try AlarmJSON.decoder.decode(T.self, from: encoded) == value)
        return value
    }

    @Test("Alarm documents round-trip to the letter", arguments: [
        "alarm-countdown", "alarm-weekly-alerting", "alarm-fixed-paused", "alarm-relative-scheduled",
    ])
    func documents(name: String) throws {
        _ = try roundTrip(AlarmDocument.self, name)
    }

    /// Found by libFuzzer (Tests/Fuzz/corpus/crash-1b1f293c…): "….002Z" was read as a hair below
    /// 2 ms and written back as "….001Z".
    @Test("An instant is written back as it was read, rounded to the millisecond", arguments: [
        ("2026-12-24T17:00:00.002Z", "2026-12-24T17:00:00.002Z"), ("2026-12-24T17:00:00.999Z", "2026-12-24T17:00:00.999Z"),
        ("2026-12-24T17:00:00.0016Z", "2026-12-24T17:00:00.002Z"), ("2026-12-24T17:00:59.9996Z", "2026-12-24T17:01:00.000Z"),
        ("2026-11-22T07:00:00+01:00", "2026-11-22T06:00:00.000Z"), ("1969-12-31T23:59:59.998Z", "1969-12-31T23:59:59.998Z"),
    ])
    func instantsRoundTrip(read: String, written: String) throws {
        let date = try #require(AlarmJSON.date(from: read))
        #expect(AlarmJSON.string(from: date) == written)
        #expect(AlarmJSON.date(from: AlarmJSON.string(from: date)) == date)
    }

    @Test("The cooking timer of docs/mqtt.md reads into the model")
    func cookingTimer() throws {
        let document = try roundTrip(AlarmDocument.self, "alarm-countdown")
        #expect(document.state == .countdown)
        #expect(document.configuration.countdownDuration == .init(preAlert: 600, postAlert: 300))
        #expect(document.configuration.attributes.presentation.alert.secondaryButtonBehavior == .countdown)
        #expect(document.configuration.attributes.tintColor == .green)
        #expect(document.configuration.attributes.metadata == .object(["method": .string("frying")]))
        #expect(document.nextAlertDate == date("2026-11-22T07:10:00Z"))
        #expect(document.alarm == Alarm(id: document.id, schedule: nil, countdownDuration: .init(preAlert: 600, postAlert: 300), state: .countdown))
    }

    @Test("Weekdays, sounds and intents read as docs/mqtt.md writes them")
    func weeklyDocument() throws {
        let document = try roundTrip(AlarmDocument.self, "alarm-weekly-alerting")
        #expect(document.configuration.schedule == weekly(7, 0, [.monday, .wednesday, .friday]))
        #expect(document.configuration.sound == .named("gentle"))
        #expect(document.configuration.stopIntent == .publish(topic: "home/bedroom/lights/set", payload: "ON", retain: false))
        #expect(document.presentationState == .alert(.init(time: .init(hour: 7, minute: 0))))
    }

    @Test("Events and presentation states round-trip")
    func events() throws {
        let alerting = try roundTrip(AlarmEvent.self, "event-alerting")
        #expect(alerting.name == .alerting && alerting.details["late"] == .number(0.001))
        let button = try roundTrip(AlarmEvent.self, "event-button")
        #expect(button.alarmID == nil && button.details["press"] == .string("short"))
        let stopped = try roundTrip(AlarmEvent.self, "event-stopped")
        #expect(stopped.name == .stopped && stopped.details["source"] == .string(AlarmEvent.Source.button.rawValue))
        _ = try roundTrip(AlarmPresentationState.self, "presentation-state")
    }

    @Test("Times are written in UTC with milliseconds and read with any offset")
    func times() throws {
        #expect(AlarmJSON.string(from: date("2026-11-22T08:00:00+01:00")) == "2026-11-22T07:00:00.000Z")
        #expect(AlarmJSON.date(from: "2026-11-22T02:00:00.250-05:00") == date("2026-11-22T07:00:00.250Z"))
        #expect(AlarmJSON.date(from: "2026-11-22 07:00") == nil)
    }

    @Test("Milliseconds are written as read, whatever their binary fraction", arguments: ["10.412", "59.999", "00.001", "07.290"])
    func millisecondsRoundTrip(seconds: String) throws {
        let text = "2026-11-22T07:00:\(seconds)Z"
        #expect(AlarmJSON.date(from: text).map(AlarmJSON.string(from:)) == text)
        #expect(AlarmJSON.string(from: Date(timeIntervalSince1970: 1_795_000_000.412)).hasSuffix(".412Z"))
    }

    @Test("Three-letter and capitalised weekdays are accepted; misspelled ones name the field")
    func weekdays() throws {
        let decoder = AlarmJSON.strictDecoder
        let short = try decoder.decode(Alarm.Schedule.self, from: Data(#"{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["mon","Fri"]}}}"#.utf8))
        #expect(short == weekly(7, 0, [.monday, .friday]))
        #expect(throws: DecodingError.self) {
            try decoder.decode(Alarm.Schedule.self, from: Data(#"{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["mondy"]}}}"#.utf8))
        }
    }

    @Test("Strict decoding names unknown fields; documents tolerate them")
    func unknownFields() throws {
        let text = ##"{"countdownDuration":{"preAlert":60,"postAlert":null,"snooze":5},"attributes":{"presentation":{"alert":{"title":"T","stopButton":{"text":"S","textColor":"#FFFFFF","systemImageName":"x"}}},"tintColor":"#FFFFFF"}}"##
        do {
            _ = try AlarmJSON.strictDecoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: Data(text.utf8))
            Issue.record("an unknown field was accepted")
        } catch {
            let alarmError = AlarmNodeError(decoding: error, prefix: "configuration")
            #expect(alarmError.field == "configuration.countdownDuration.snooze")
            #expect(alarmError.code == .badRequest)
        }
        let lenient = try AlarmJSON.decoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: Data(text.utf8))
        #expect(lenient.countdownDuration?.preAlert == 60)
    }

    @Test("Wrong types and missing fields name the field")
    func typeErrors() {
        func field(_ text: String) -> String? {
            do {
                _ = try AlarmJSON.strictDecoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: Data(text.utf8))
                return "accepted"
            } catch {
                return AlarmNodeError(decoding: error, prefix: "configuration").field
            }
        }
        #expect(field(#"{"countdownDuration":{"preAlert":"ten"},"attributes":{}}"#) == "configuration.countdownDuration.preAlert")
        #expect(field(#"{"countdownDuration":{"preAlert":60}}"#) == "configuration.attributes")
        #expect(field(#"{"schedule":{"fixed":"tomorrow"},"attributes":{}}"#) == "configuration.schedule.fixed")
        #expect(field(##"{"attributes":{"presentation":{"alert":{"title":"T","stopButton":{"text":"S","textColor":"white","systemImageName":"x"}}},"tintColor":"#FFFFFF"}}"##)
            == "configuration.attributes.presentation.alert.stopButton.textColor")
    }

    @Test("Typed metadata becomes raw JSON and comes back")
    func metadata() throws {
        struct CookingData: AlarmMetadata { var method: String; var minutes: Int }
        let typed = AlarmManager.AlarmConfiguration<CookingData>.timer(
            duration: 600,
            attributes: .init(presentation: .init(alert: .init(title: "Done")),
                              metadata: CookingData(method: "frying", minutes: 10), tintColor: .green))
        let erased = try typed.erased()
        #expect(erased.attributes.metadata == .object(["method": .string("frying"), "minutes": .number(10)]))
        #expect(try erased.attributes.metadata?.decode(as: CookingData.self) == CookingData(method: "frying", minutes: 10))
    }
}

@Suite("Command replies")
struct ReplyTests {
    func object(_ reply: NodeReply, _ correlationID: JSONValue? = nil) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(reply.payload(correlationID: correlationID)))
    }

    @Test("Replies are written as docs/mqtt.md says, and read back")
    func replies() throws {
        let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: JSONFixtureTests.fixture("alarm-countdown"))
        #expect(try object(.alarm(nil), .number(7)) == .object(["ok": .bool(true), "alarm": .null, "correlationID": .number(7)]))
        #expect(try object(.authorization(.denied)) == .object(["ok": .bool(true), "authorization": .string("denied")]))
        let failure = NodeFailure.node(.invalidConfiguration(field: "configuration.schedule", reason: "never occurs"))
        #expect(try object(.failure(failure)) == .object(["ok": .bool(false), "error": .object([
            "code": .string("invalidConfiguration"), "message": .string("configuration.schedule: never occurs"),
            "field": .string("configuration.schedule"),
        ])]))
        var other = document
        other.id = UUID()
        for reply in [NodeReply.alarm(document), .alarms([document, other]), .authorization(.authorized), .failure(failure)] {
            #expect(try NodeReply.decode(reply.payload()) == reply)
        }
        #expect(try object(.alarm(document))["alarm"] == (try JSONValue(encoding: document)))
    }

    @Test("A list that names an alarm twice is refused: alarmd never sends one, and the mirror of the list trapped on it")
    func listNamingAnAlarmTwice() throws {
        let document = try AlarmJSON.decoder.decode(AlarmDocument.self, from: JSONFixtureTests.fixture("alarm-countdown"))
        #expect(throws: DecodingError.self) { try NodeReply.decode(NodeReply.alarms([document, document]).payload()) }
        // The mirror takes in every list that comes on the reply topic, whatever its correlation.
        var mirror = RetainedAlarmMirror()
        if case .alarms(let list)? = try? NodeReply.decode(NodeReply.alarms([document, document]).payload()) {
            _ = mirror.replace(with: list)
        }
        #expect(mirror.documents.isEmpty)
    }

    @Test("A refusal with a code this version does not know keeps the node's message")
    func unknownErrorCode() throws {
        let payload = Array(#"{"ok":false,"error":{"code":"rateLimited","message":"too many requests: wait a minute"}}"#.utf8)
        #expect(try NodeReply.decode(payload) == .failure(.node(.internal("too many requests: wait a minute"))))
    }
}
