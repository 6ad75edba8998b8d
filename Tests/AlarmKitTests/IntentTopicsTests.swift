import Foundation
import Testing
@testable import AlarmKit

@Suite("Intent topics: where a node may publish (SPEC §3)")
struct IntentTopicsTests {
    let policy = IntentTopics(prefix: "alarmd", node: "bedroom", allowed: ["home/lights/+/set", "garden/#", "#"])
    let strict = IntentTopics(prefix: "alarmd", node: "bedroom")

    @Test("MQTT filter matching: + is one level, # any rest (none too), $ topics only by name",
          arguments: [
              ("home/+/set", "home/lights/set", true), ("home/+/set", "home/lights/x/set", false),
              ("home/+/set", "home//set", true), ("home/#", "home", true), ("home/#", "home/a/b", true),
              ("home/#", "homes/a", false), ("#", "anything/at/all", true), ("#", "$SYS/broker", false),
              ("+/x", "$SYS/x", false), ("$SYS/#", "$SYS/broker", true), ("a/b", "a/b", true), ("a/b", "a/b/", false),
              ("a/+", "a", false), ("+", "/", false), ("+/+", "/", true),
          ])
    func matching(filter: String, topic: String, matches: Bool) {
        #expect(IntentTopics.matches(filter: filter, topic: topic) == matches)
    }

    @Test("Filters are checked: '#' whole and last, '+' whole, not empty")
    func filterProblems() {
        for good in ["home/lights/set", "home/+/set", "home/#", "#", "+", "+/+/#"] {
            #expect(IntentTopics.problem(inFilter: good) == nil, "\(good)")
        }
        for bad in ["", "home/#/set", "home/lights#", "home/li+hts", "a/+b", "##"] {
            #expect(IntentTopics.problem(inFilter: bad) != nil, "\(bad)")
        }
    }

    @Test("Always under <base>/intents/; elsewhere only where a filter matches")
    func allowed() {
        #expect(strict.refusal(of: "alarmd/bedroom/intents/lights") == nil)
        #expect(strict.refusal(of: "alarmd/bedroom/intents/a/b") == nil)
        let refusal = strict.refusal(of: "home/door/unlock")
        #expect(refusal?.contains("intents.allow") == true && refusal?.contains("alarmd/bedroom/intents/") == true)
        #expect(strict.refusal(of: "alarmd/bedroom/intentsX") != nil)
        #expect(strict.refusal(of: "alarmd/kitchen/intents/x") != nil)
        #expect(IntentTopics(prefix: "alarmd", node: "bedroom", allowed: ["home/lights/+/set"]).refusal(of: "home/lights/hall/set") == nil)
    }

    @Test("No filter opens a node's commands, buttons or state", arguments: [
        "alarmd/bedroom/cmd/schedule", "alarmd/bedroom/cmd/anything", "alarmd/bedroom/cmd",
        "alarmd/kitchen/cmd/cancel", "other/prefix/node/cmd/stop", "cmd/schedule", "alarmd/groups/house/cmd/stop",
        "alarmd/bedroom/sim/press", "alarmd/bedroom/sim", "alarmd/bedroom/ha/stop", "alarmd/bedroom/ha/snooze",
        "alarmd/kitchen/ha/stop", "alarmd/kitchen/sim/press", "alarmd/bedroom/status", "alarmd/kitchen/status",
        "alarmd/bedroom/alarms/2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77", "alarmd/kitchen/events",
    ])
    func neverAllowed(topic: String) {
        #expect(policy.refusal(of: topic) != nil)
    }

    @Test("A prefix of several levels, and none: the commands of the nodes under it stay closed")
    func prefixes() {
        let deep = IntentTopics(prefix: "home/alarms", node: "bedroom", allowed: ["#"])
        #expect(deep.refusal(of: "home/alarms/kitchen/cmd/x") != nil)
        #expect(deep.refusal(of: "home/alarms/kitchen/status") != nil)
        #expect(deep.refusal(of: "home/alarms/kitchen/intents/x") == nil)
        #expect(deep.refusal(of: "home/alarms/status") == nil)
        let bare = IntentTopics(prefix: "", node: "bedroom", allowed: ["#"])
        #expect(bare.refusal(of: "kitchen/cmd/whatever") != nil)
        #expect(bare.refusal(of: "bedroom/intents/x") == nil)
        #expect(bare.refusal(of: "bedroom/ha/stop") != nil)
        #expect(bare.refusal(of: "home/status") == nil)
    }

    @Test("schedule refuses an intent outside the allowance with invalidConfiguration, naming the field")
    func scheduleRefuses() throws {
        let now = date("2026-11-22T10:00:00Z")
        var engine = AlarmEngine(configuration: EngineConfiguration(timeZone: zone("UTC"), intentTopics: strict))
        for (stop, secondary, field) in [
            (AlarmIntent.publish(topic: "home/door/unlock", payload: "x"), nil as AlarmIntent?, "configuration.stopIntent.publish.topic"),
            (.publish(topic: "alarmd/bedroom/intents/ok", payload: "x"), .publish(topic: "alarmd/kitchen/cmd/cancel", payload: "{}"),
             "configuration.secondaryIntent.publish.topic"),
        ] {
            let error = #expect(throws: AlarmNodeError.self) {
                _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60, stopIntent: stop, secondaryIntent: secondary), now: now)
            }
            guard case .invalidConfiguration(let named, let reason)? = error else {
                Issue.record("not invalidConfiguration: \(String(describing: error))")
                continue
            }
            #expect(named == field && reason.contains("alarmd/"))
        }
        #expect(engine.records.isEmpty)
        _ = try engine.schedule(id: UUID(), configuration: configuration(
            preAlert: 60, stopIntent: .publish(topic: "alarmd/bedroom/intents/lights", payload: "ON")), now: now)
        #expect(engine.records.count == 1)
    }

    @Test("A restored alarm whose intent is no longer allowed rings, stops, and reports the intent refused without running it")
    func restoredAlarmKeepsRinging() throws {
        let now = date("2026-11-22T10:00:00Z")
        let id = UUID()
        let stopIntent = AlarmIntent.publish(topic: "home/door/unlock", payload: "open")
        let secondaryIntent = AlarmIntent.publish(topic: "home/lights/set", payload: "ON")
        var before = AlarmEngine(configuration: EngineConfiguration(timeZone: zone("UTC")))
        _ = try before.schedule(id: id, configuration: configuration(preAlert: 60, secondary: .custom, stopIntent: stopIntent,
                                                                     secondaryIntent: secondaryIntent), now: now)
        var restored = AlarmEngine(configuration: EngineConfiguration(timeZone: zone("UTC"), intentTopics: strict),
                                   records: Array(before.records.values))
        #expect(restored.advance(to: now + 60).contains(.alertStarted(id, sound: .default)))
        let secondary = try restored.secondaryAction(id: id, now: now + 61)
        #expect(!secondary.contains { if case .runIntent = $0 { true } else { false } })
        #expect(secondary.event(.intent)?.details["topic"] == .string("home/lights/set"))
        let stop = try restored.stop(id: id, now: now + 62)
        #expect(!stop.contains { if case .runIntent = $0 { true } else { false } })
        #expect(stop.contains(.alertEnded(id)) && stop.removedIDs == [id])
        let event = try #require(stop.event(.intent))
        #expect(event.details["topic"] == .string("home/door/unlock"))
        guard case .string(let reason)? = event.details["refused"] else {
            Issue.record("no refused reason in \(event)")
            return
        }
        #expect(reason.contains("intents.allow"))
    }
}
