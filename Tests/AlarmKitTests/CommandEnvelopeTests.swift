import Foundation
import Testing
@testable import AlarmKit

/// The typed command envelope: one decoding pass, with the reply route kept for refusals.
@Suite("Command envelope")
struct CommandEnvelopeTests {
    func decode(_ operation: String, _ json: String, responseTopic: String? = nil) -> Result<NodeCommand, NodeCommand.Rejection> {
        NodeCommand.decode(operation: operation, payload: Array(json.utf8), responseTopic: responseTopic)
    }

    @Test("A refused command keeps its replyTo route and correlationID")
    func refusalKeepsTheRoute() throws {
        guard case .failure(let rejection) = decode("stop", #"{"replyTo":"me/r","correlationID":7,"id":"nope"}"#) else {
            Issue.record("a bad id was accepted")
            return
        }
        #expect(rejection.replyRoute == .init(topic: "me/r", correlation: .payload(.number(7))))
        #expect(rejection.error.field == "id")
    }

    @Test("Faults deep in the configuration name their field")
    func nestedField() throws {
        let json = ##"{"configuration":{"countdownDuration":{"preAlert":"ten"},"attributes":{"presentation":{"alert":{"title":"T"}},"tintColor":"#FFFFFF"}}}"##
        guard case .failure(let rejection) = decode("schedule", json) else {
            Issue.record("a string duration was accepted")
            return
        }
        #expect(rejection.error.field == "configuration.countdownDuration.preAlert")
    }

    @Test("An id or replyTo set to null is one left out, as a client's encoder may write it")
    func nullIsAbsent() throws {
        let configuration = ##"{"countdownDuration":{"preAlert":60},"attributes":{"presentation":{"alert":{"title":"T"}},"tintColor":"#FFFFFF"}}"##
        let command = try decode("schedule", #"{"id":null,"replyTo":null,"correlationID":null,"configuration":\#(configuration)}"#).get()
        guard case .schedule(_, let decoded, nil) = command.action else {
            Issue.record("not a schedule: \(command.action)")
            return
        }
        #expect(decoded.countdownDuration?.preAlert == 60)
        #expect(command.replyRoute == nil)
        // Where the id is required, null is refused as its absence is.
        for (operation, payload, group) in [("cancel", #"{"id":null}"#, nil), ("schedule", #"{"id":null,"configuration":\#(configuration)}"#, "house")] {
            guard case .failure(let rejection) = NodeCommand.decode(operation: operation, payload: Array(payload.utf8), group: group) else {
                Issue.record("\(operation) without an id was accepted")
                continue
            }
            #expect(rejection.error.field == "id")
        }
    }

    @Test("A string that is not UTF-8 is refused in words, not with the decoder's internals")
    func invalidUTF8InAString() throws {
        let before = ##"{"configuration":{"countdownDuration":{"preAlert":60},"attributes":{"presentation":{"alert":{"title":"caf"##
        let after = ##""}},"tintColor":"#FFFFFF"}}}"##
        let payload = Array(before.utf8) + [0xE9] + Array(after.utf8)
        guard case .failure(let rejection) = NodeCommand.decode(operation: "schedule", payload: payload, responseTopic: nil) else {
            Issue.record("a title that is not UTF-8 was accepted")
            return
        }
        #expect(rejection.error.code == .badRequest)
        #expect(rejection.error.message == "the payload is not valid UTF-8 JSON (line 1, column 103)")
    }

    @Test("A fractional hour and an unknown behaviour name their field and say what is accepted", arguments: [
        (##"{"schedule":{"relative":{"time":{"hour":7.5,"minute":0},"repeats":"never"}},"attributes":{"presentation":{"alert":{"title":"T"}},"tintColor":"#FFFFFF"}}"##,
         "configuration.schedule.relative.time.hour", "must be a whole number"),
        (##"{"countdownDuration":{"preAlert":60},"attributes":{"presentation":{"alert":{"title":"T","secondaryButtonBehavior":"bogus"}},"tintColor":"#FFFFFF"}}"##,
         "configuration.attributes.presentation.alert.secondaryButtonBehavior", #"use "countdown" or "custom""#),
    ])
    func wrongValue(configuration: String, field: String, advice: String) throws {
        guard case .failure(let rejection) = decode("schedule", #"{"configuration":\#(configuration)}"#) else {
            Issue.record("\(field) was accepted")
            return
        }
        #expect(rejection.error.field == field)
        #expect(rejection.error.message.contains(advice))
    }

    @Test("An MQTT v5 response topic wins over replyTo, which is then not read")
    func responseTopicWins() throws {
        let command = try decode("list", #"{"replyTo":"bad/#"}"#, responseTopic: "v5/reply").get()
        #expect(command.replyRoute?.topic == "v5/reply")
        #expect(command.action == .list)
        guard case .failure(let rejection) = decode("list", #"{"replyTo":"bad/#"}"#) else {
            Issue.record("a wildcard replyTo was accepted")
            return
        }
        #expect(rejection.error.field == "replyTo")
        for bad in [#"5"#, #""""#, #""me/\u0000""#] {
            guard case .failure(let rejection) = decode("list", #"{"replyTo":\#(bad)}"#) else {
                Issue.record("replyTo \(bad) was accepted")
                continue
            }
            #expect(rejection.error.message == "replyTo: must be the topic to reply on: a non-empty string without wildcards or U+0000")
        }
    }

    @Test("A blank payload is an empty object; a non-object is refused whole", arguments: ["", " \n", "{}"])
    func blank(payload: String) throws {
        #expect(try decode("list", payload).get().action == .list)
    }

    @Test("Not an object, or not JSON", arguments: ["[1]", "7", "{", "\u{FF}"])
    func notAnObject(payload: String) {
        guard case .failure(let rejection) = decode("list", payload) else {
            Issue.record("'\(payload)' was accepted")
            return
        }
        #expect(rejection.error.field == nil)
        #expect(rejection.replyRoute == nil)
    }

    @Test("JSON that is not an object, null among it, is told so, not called invalid JSON", arguments: ["null", "[1]", "7", "\"x\""])
    func jsonButNotAnObject(payload: String) {
        guard case .failure(let rejection) = decode("list", payload) else {
            Issue.record("'\(payload)' was accepted")
            return
        }
        #expect(rejection.error.message == "the payload must be a JSON object")
    }

    @Test("A schedule sent to a group needs its id, and takes the group into its action")
    func groupSchedule() throws {
        let configuration = ##"{"countdownDuration":{"preAlert":60},"attributes":{"presentation":{"alert":{"title":"Tea"}},"tintColor":"#FFFFFF"}}"##
        let withoutID = NodeCommand.decode(operation: "schedule", payload: Array(#"{"configuration":\#(configuration),"replyTo":"r"}"#.utf8), group: "house")
        guard case .failure(let rejection) = withoutID else {
            Issue.record("a group schedule without an id was accepted")
            return
        }
        #expect(rejection.error.code == .badRequest)
        #expect(rejection.replyRoute?.topic == "r", "the refusal is still answered")

        let id = UUID()
        let command = try NodeCommand.decode(operation: "schedule", payload: Array(#"{"id":"\#(id.uuidString)","configuration":\#(configuration)}"#.utf8),
                                             group: "house").get()
        guard case .schedule(let decodedID, _, let group) = command.action else {
            Issue.record("expected a schedule, got \(command.action)")
            return
        }
        #expect(decodedID == id && group == "house")
        let own = try NodeCommand.decode(operation: "schedule", payload: Array(#"{"configuration":\#(configuration)}"#.utf8)).get()
        guard case .schedule(_, _, let ownGroup) = own.action else {
            Issue.record("expected a schedule, got \(own.action)")
            return
        }
        #expect(ownGroup == nil)
    }

    @Test("A group's reply names the node; a document names its group")
    func replyNamesTheNode() throws {
        let reply = try JSONDecoder().decode([String: JSONValue].self, from: Data(NodeReply.alarms([]).payload(correlationID: .string("c"), node: "kitchen")))
        #expect(reply["node"] == .string("kitchen") && reply["correlationID"] == .string("c"))
        let own = try JSONDecoder().decode([String: JSONValue].self, from: Data(NodeReply.alarms([]).payload()))
        #expect(own["node"] == nil)
    }
}
