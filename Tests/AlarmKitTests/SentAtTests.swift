import Foundation
import Testing
@testable import AlarmKit

/// A command's `sentAt` (docs/mqtt.md): countdowns count from the requester's instant, so that
/// the members of a group that receive one command at different moments fire together.
@Suite("Countdowns count from the command's sentAt")
struct SentAtTests {
    let id = UUID()
    let sent = date("2026-11-22T10:00:00Z")

    /// Two members of a group, reached 40 ms apart by the broker.
    func twoMembers(_ body: (inout AlarmEngine, Date) throws -> Void) rethrows -> (first: AlarmDocument?, second: AlarmDocument?) {
        var first = AlarmEngine(), second = AlarmEngine()
        try body(&first, sent + 0.005)
        try body(&second, sent + 0.045)
        return (first.document(for: id), second.document(for: id))
    }

    @Test("A group timer counts from sentAt on every member, whenever the command reached it")
    func timerFromSentAt() throws {
        let members = try twoMembers { engine, arrival in
            _ = try engine.schedule(id: id, configuration: configuration(preAlert: 3), group: "house", now: arrival, sentAt: sent)
        }
        #expect(members.first?.nextAlertDate == sent + 3)
        #expect(members.second?.nextAlertDate == sent + 3)
        guard case .countdown(let countdown)? = members.second?.presentationState else {
            Issue.record("no countdown: \(String(describing: members.second))")
            return
        }
        #expect(countdown.startDate == sent && countdown.fireDate == sent + 3)

        // Without sentAt each counts from its own arrival, as before.
        let unstamped = try twoMembers { engine, arrival in
            _ = try engine.schedule(id: id, configuration: configuration(preAlert: 3), now: arrival)
        }
        #expect(abs(unstamped.first?.nextAlertDate?.timeIntervalSince(sent + 3.005) ?? 1) < 1e-6)
        #expect(abs(unstamped.second?.nextAlertDate?.timeIntervalSince(sent + 3.045) ?? 1) < 1e-6)
    }

    @Test("The events still carry the member's own time, and the timer alerts at sentAt + duration")
    func eventsAtArrival() throws {
        var engine = AlarmEngine()
        let arrival = sent + 0.045
        let effects = try engine.schedule(id: id, configuration: configuration(preAlert: 3), now: arrival, sentAt: sent)
        #expect(effects.event(.scheduled)?.at == arrival)
        #expect(engine.advance(to: sent + 2.999).isEmpty)
        let alert = engine.advance(to: sent + 3)
        #expect(alert.event(.alerting)?.details["late"] == .number(0))
    }

    @Test("Pause, resume and snooze of a group timer count from sentAt too")
    func pauseResumeSnooze() throws {
        let members = try twoMembers { engine, arrival in
            _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60, postAlert: 30, secondary: .countdown),
                                    now: arrival, sentAt: sent)
            // Paused 10 s in: both keep 10 s elapsed, though the pause reached them 40 ms apart.
            let offset = arrival.timeIntervalSince(sent)
            _ = try engine.pause(id: id, now: sent + 10 + offset, sentAt: sent + 10)
            guard case .paused(let paused)? = engine.document(for: id)?.presentationState else {
                Issue.record("not paused")
                return
            }
            #expect(paused.previouslyElapsedDuration == 10)
            _ = try engine.resume(id: id, now: sent + 20 + offset, sentAt: sent + 20)
            #expect(engine.document(for: id)?.nextAlertDate == sent + 70)
            _ = engine.advance(to: sent + 70)
            _ = try engine.perform(.countdown, id: id, now: sent + 75 + offset, sentAt: sent + 75)
        }
        #expect(members.first?.nextAlertDate == sent + 105)
        #expect(members.second?.nextAlertDate == sent + 105)
    }

    @Test("A sentAt further ahead than the skew allowance, or older than the maximum age, counts from the node's own now",
          arguments: [AlarmEngine.sentAtSkewAllowance + 0.001, -AlarmEngine.sentAtMaximumAge - 0.001, 86_400 * 365, -86_400] as [TimeInterval])
    func outOfBounds(offset: TimeInterval) throws {
        var engine = AlarmEngine()
        let now = sent
        _ = try engine.schedule(id: id, configuration: configuration(preAlert: 60), now: now, sentAt: now + offset)
        #expect(engine.document(for: id)?.nextAlertDate == now + 60)
        #expect(AlarmEngine.countdownOrigin(sentAt: now + offset, now: now) == now)
    }

    @Test("Within the bounds sentAt is used as it is, also slightly ahead of the node's clock",
          arguments: [AlarmEngine.sentAtSkewAllowance, 0.2, 0, -0.5, -AlarmEngine.sentAtMaximumAge] as [TimeInterval])
    func withinBounds(offset: TimeInterval) {
        #expect(AlarmEngine.countdownOrigin(sentAt: sent + offset, now: sent) == sent + offset)
        #expect(AlarmEngine.countdownOrigin(sentAt: nil, now: sent) == sent)
    }

    @Test("A short timer that reached a member after its end alerts at once, with its lateness")
    func deliveredAfterTheEnd() throws {
        var engine = AlarmEngine()
        let effects = try engine.schedule(id: id, configuration: configuration(preAlert: 1), now: sent + 4, sentAt: sent)
        #expect(effects.eventNames == [.scheduled, .countdown, .alerting])
        #expect(effects.event(.alerting)?.details["late"] == .number(3))
    }

    @Test("A fixed-date alarm ignores sentAt: it is due at its date")
    func fixedDate() throws {
        var engine = AlarmEngine()
        _ = try engine.schedule(id: id, configuration: configuration(schedule: .fixed(sent + 600), preAlert: 60),
                                now: sent + 0.04, sentAt: sent)
        #expect(engine.document(for: id)?.nextAlertDate == sent + 600)
    }

    @Test("sentAt is read from any command, in any ISO 8601 offset; a malformed one is refused naming the field")
    func decoding() throws {
        let command = try NodeCommand.decode(operation: "pause", payload: Array(
            #"{"id":"\#(id.uuidString)","sentAt":"2026-11-22T11:00:00.250+01:00"}"#.utf8), group: "house").get()
        #expect(command.sentAt == sent + 0.25)
        #expect(try NodeCommand.decode(operation: "list", payload: Array("{}".utf8)).get().sentAt == nil)
        for bad in [#""yesterday""#, "12", "null"] {
            guard case .failure(let rejection) = NodeCommand.decode(
                operation: "stop", payload: Array(#"{"id":"\#(id.uuidString)","sentAt":\#(bad),"replyTo":"r"}"#.utf8)) else {
                Issue.record("sentAt \(bad) was accepted")
                continue
            }
            #expect(rejection.error.code == .badRequest && rejection.error.field == "sentAt")
            #expect(rejection.replyRoute?.topic == "r", "the refusal is still answered")
        }
    }

    @Test("A node applies a command's sentAt: two nodes reached 40 ms apart fire together")
    func nodeSubmitsSentAt() async throws {
        let clock = ManualAlarmClock(now: sent + 0.005)
        let near = LocalAlarmNode(clock: clock)
        let command = try NodeCommand.decode(operation: "schedule", payload: Array(
            ##"{"id":"\##(id.uuidString)","sentAt":"2026-11-22T10:00:00.000Z","configuration":{"countdownDuration":{"preAlert":3},"attributes":{"presentation":{"alert":{"title":"Tea"}},"tintColor":"#FFFFFF"}}}"##.utf8),
            group: "house").get()
        let first = await near.waitUntilDurable(await near.submit(command.action, sentAt: command.sentAt))
        clock.advance(by: 0.04)
        let far = LocalAlarmNode(clock: clock)
        let second = await far.waitUntilDurable(await far.submit(command.action, sentAt: command.sentAt))
        guard case .alarm(let one?) = first, case .alarm(let two?) = second else {
            Issue.record("not scheduled: \(first), \(second)")
            return
        }
        #expect(one.nextAlertDate == sent + 3 && two.nextAlertDate == sent + 3)
        #expect(one.group == "house")
    }
}
