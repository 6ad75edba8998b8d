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
}
