import AlarmKit
import Dispatch
import Foundation
import Glibc
import Mosquitto
import MosquittoTestSupport
import Testing

/// Groups of real alarmd processes on one real broker (SPEC §8): one command, every member rings.
@Suite("Groups of real alarmd processes", .serialized, .timeLimit(.minutes(5)))
struct GroupTests {
    static let group = "house"
    /// The p50 of a group timer's spread, in ms, that a quiet enough attempt stays under: with
    /// sentAt 2–8 ms on this busy 2-core machine (21 ms once, a build on the cores); without it
    /// 11–35 ms (docs/fleet.md).
    static let timerSpreadBound = 10.0

    /// A broker, `count` alarmd members of ``group`` connected through a proxy (so a test can hold
    /// them off the broker), and an observer of every status and event. Cleans everything up.
    private func withMembers<Result>(
        _ count: Int,
        _ body: (TestBroker, TCPProxy, [DaemonProcess], EventRecorder) async throws -> Result
    ) async throws -> Result {
        try await TestBroker.withBroker { broker in
            let proxy = try TCPProxy(upstreamPort: broker.port)
            defer { proxy.close() }
            return try await withTestClients { clients in
                let (_, events) = try clients.start(broker.clientConfiguration(clientID: "group-observer"), subscribing: ["alarmd/+/status", "alarmd/+/events"])
                try await events.connected()
                var members: [DaemonProcess] = []
                do {
                    for index in 0..<count {
                        members.append(try await DaemonProcess.start(
                            broker: broker, node: "member-\(index)-\(UUID().uuidString.prefix(4))",
                            arguments: ["--broker", "127.0.0.1:\(proxy.port)", "--group", Self.group, "--group", "kids"]))
                    }
                    var online = Set<String>()
                    _ = try await events.messages(on: "alarmd/+/status", within: .seconds(60)) { message in
                        if let status = try? AlarmJSON.decoder.decode(NodeStatus.self, from: Data(message.payload)),
                           status.isOnline, status.groups == [Self.group, "kids"] {
                            online.insert(message.topic)
                        }
                        return online.count == count
                    }
                    let result = try await body(broker, proxy, members, events)
                    for member in members { await member.cleanUp() }
                    return result
                } catch {
                    if let member = members.first { print("first member's log:\n\(member.log)") }
                    for member in members { await member.cleanUp() }
                    throw error
                }
            }
        }
    }

    private func settings(_ broker: TestBroker) -> RemoteNodeSettings {
        RemoteNodeSettings(host: broker.host, port: broker.port, node: "unused", timeout: .seconds(10))
    }

    /// The `alerting` events of alarm `id`, one per member, within `timeout`; with when each arrived.
    private func alertingEvents(of id: UUID, count: Int, from events: EventRecorder, within timeout: Duration) async throws -> [(node: String, event: AlarmEvent)] {
        var seen: [String: AlarmEvent] = [:]
        _ = try await events.messages(on: "alarmd/+/events", within: timeout) { message in
            if let event = try? AlarmJSON.decoder.decode(AlarmEvent.self, from: Data(message.payload)),
               event.name == .alerting, event.alarmID == id {
                seen[message.topic] = event
            }
            return seen.count == count
        }
        return seen.map { ($0.key, $0.value) }
    }

    /// The `late` of an `alerting` event, in seconds.
    private func lateness(of event: AlarmEvent) -> Double {
        if case .number(let seconds)? = event.details["late"] { seconds } else { .infinity }
    }

    /// p50 and max of `values`.
    private func summary(_ values: [Double]) -> (p50: Double, max: Double) {
        let sorted = values.sorted()
        return (sorted[sorted.count / 2], sorted.last ?? 0)
    }

    /// The lateness of 1 ms absolute `clock_nanosleep` waits on CLOCK_MONOTONIC, in ms, over
    /// `samples` waits, on a thread of its own (it blocks) while the members alert.
    private func nanosleepLateness(samples: Int) async -> [Double] {
        await withCheckedContinuation { continuation in
            // A thread of its own: the waits block, and must not hold a cooperative thread.
            Thread.detachNewThread {
                var lateness: [Double] = []
                var target = timespec()
                clock_gettime(CLOCK_MONOTONIC, &target)
                for _ in 0..<samples {
                    target.tv_nsec += 1_000_000
                    if target.tv_nsec >= 1_000_000_000 { target.tv_nsec -= 1_000_000_000; target.tv_sec += 1 }
                    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil)
                    var now = timespec()
                    clock_gettime(CLOCK_MONOTONIC, &now)
                    lateness.append(Double((now.tv_sec - target.tv_sec) * 1_000_000_000 + (now.tv_nsec - target.tv_nsec)) / 1e6)
                }
                continuation.resume(returning: lateness)
            }
        }
    }

    /// It measures milliseconds across 20 processes on a 2-core machine: beside every other suite
    /// (`swift test` runs them in parallel) a fixed-date alarm's spread reached p50 200 ms, so it
    /// runs only when `ALARMD_GROUP_TIMING_TEST=1`: `scripts/test` runs it on its own after the main run.
    @Test("20 members: a group timer alerts on all of them together; with the broker gone from 1 s before the alert to 10 s after, all still alert on time",
          .enabled(if: ProcessInfo.processInfo.environment["ALARMD_GROUP_TIMING_TEST"] == "1",
                   "measures milliseconds across 20 processes: run alone by scripts/test with ALARMD_GROUP_TIMING_TEST=1"))
    func twentyMembers() async throws {
        let count = 20
        try await withMembers(count) { broker, proxy, _, events in
            let group = RemoteGroup(settings: settings(broker), group: Self.group)
            // A 3 s group timer, measured up to three times: 20 members waking at one instant share
            // 2 cores with whatever else runs (another engineer's build took them for 20 ms once),
            // so a spread over the bound is measured again on a new timer; every attempt is printed.
            var spreads: [Double] = []
            for attempt in 1...3 {
                let id = UUID()
                let timer = AlarmManager.AlarmConfiguration<JSONValue>.timer(
                    duration: 3, attributes: AlarmAttributes(presentation: AlarmPresentation(alert: .init(title: "Together")), tintColor: .blue))
                let replies = try await group.schedule(id: id, configuration: timer)
                #expect(replies.answered.count == count, "every member answers")
                #expect(replies.silent.isEmpty)
                var fireDates: [Date] = []
                for member in replies.answered {
                    guard case .alarm(let document?) = member.reply else {
                        Issue.record("member \(member.node) answered \(member.reply)")
                        continue
                    }
                    #expect(document.id == id)
                    #expect(document.group == Self.group)
                    if let fire = document.nextAlertDate { fireDates.append(fire) }
                }
                if attempt == 1 {
                    let listed = try await group.list()
                    #expect(listed.answered.count == count)
                    #expect(listed.answered.allSatisfy { if case .alarms(let alarms) = $0.reply { alarms.contains { $0.id == id && $0.group == Self.group } } else { false } })
                }

                async let sleepLateness = nanosleepLateness(samples: 2000)
                let alerts = try await alertingEvents(of: id, count: count, from: events, within: .seconds(20))
                let sleeps = summary(await sleepLateness)
                let ats = alerts.map(\.event.at)
                let first = ats.min() ?? Date()
                let spread = summary(ats.map { $0.timeIntervalSince(first) * 1000 })
                let firstFire = fireDates.min() ?? Date()
                let fireSpread = summary(fireDates.map { $0.timeIntervalSince(firstFire) * 1000 })
                let late = summary(alerts.map { lateness(of: $0.event) * 1000 })
                print("GROUP TIMING \(count) members, attempt \(attempt): alerting 'at' spread p50 \(String(format: "%.1f", spread.p50)) ms, max \(String(format: "%.1f", spread.max)) ms; "
                    + "fire dates (sentAt + 3 s) spread p50 \(String(format: "%.1f", fireSpread.p50)) ms, max \(String(format: "%.1f", fireSpread.max)) ms; "
                    + "each member's own lateness p50 \(String(format: "%.1f", late.p50)) ms, max \(String(format: "%.1f", late.max)) ms; "
                    + "clock_nanosleep 1 ms lateness in the same run p50 \(String(format: "%.3f", sleeps.p50)) ms, max \(String(format: "%.3f", sleeps.max)) ms")
                // Every member counts from the request's sentAt, not from when the broker reached it
                // (which spread the fire dates over 28–107 ms without sentAt).
                #expect(fireDates.count == count && fireSpread.max == 0, "one fire date on every member")
                #expect(spread.max < 1000, "a sanity bound: the members alert within a second of each other")
                spreads.append(spread.p50)
                // Silenced, so that 20 buzzers sounding do not load the next measurement.
                _ = try await group.perform(.stop, id: id)
                if spread.p50 < Self.timerSpreadBound { break }
            }
            // What is left is each member's wake-up, as for a fixed date (below). Without sentAt the
            // broker's delivery to 20 members added to it: p50 11–35 ms.
            #expect(spreads.contains { $0 < Self.timerSpreadBound },
                    "the members alert within a few milliseconds of each other (p50 of each attempt: \(spreads) ms)")

            // A fixed-date alarm is due at one instant on every member: only their wake-ups differ.
            let fixedID = UUID()
            let due = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3).rounded(.up))
            let fixed = try await group.schedule(id: fixedID, configuration: .alarm(
                schedule: .fixed(due), attributes: AlarmAttributes(presentation: AlarmPresentation(alert: .init(title: "At once")), tintColor: .blue)))
            #expect(fixed.answered.count == count)
            async let fixedSleepLateness = nanosleepLateness(samples: 2000)
            let fixedAlerts = try await alertingEvents(of: fixedID, count: count, from: events, within: .seconds(20))
            let fixedSleeps = summary(await fixedSleepLateness)
            let fixedFirst = fixedAlerts.map(\.event.at).min() ?? due
            let fixedSpread = summary(fixedAlerts.map { $0.event.at.timeIntervalSince(fixedFirst) * 1000 })
            let fixedLate = summary(fixedAlerts.map { $0.event.at.timeIntervalSince(due) * 1000 })
            print("GROUP FIXED \(count) members: alerting 'at' spread p50 \(String(format: "%.1f", fixedSpread.p50)) ms, max \(String(format: "%.1f", fixedSpread.max)) ms; "
                + "after the due instant p50 \(String(format: "%.1f", fixedLate.p50)) ms, max \(String(format: "%.1f", fixedLate.max)) ms; "
                + "clock_nanosleep 1 ms lateness in the same run p50 \(String(format: "%.3f", fixedSleeps.p50)) ms, max \(String(format: "%.3f", fixedSleeps.max)) ms")
            #expect(fixedSpread.max < 1000, "a sanity bound only")
            _ = try await group.perform(.stop, id: fixedID)

            // The broker goes away one second before the next alert and comes back ten seconds later.
            let second = UUID()
            let secondReplies = try await group.schedule(id: second, configuration: .timer(
                duration: 4, attributes: AlarmAttributes(presentation: AlarmPresentation(alert: .init(title: "Broker or not")), tintColor: .blue)))
            #expect(secondReplies.answered.count == count)
            await group.close()
            let secondFire = secondReplies.answered.compactMap { if case .alarm(let document?) = $0.reply { document.nextAlertDate } else { nil } }
            let earliest = try #require(secondFire.min())
            try await Task.sleep(for: .seconds(max(0, earliest.timeIntervalSinceNow - 1)))
            proxy.acceptsConnections = false
            await broker.kill()
            let killedAt = Date()
            try await Task.sleep(for: .seconds(10))
            try await broker.start()
            // The observer resubscribes before the members may reconnect, so no event can pass unseen.
            try await events.connected(within: .seconds(10))
            let returnedAt = Date()
            proxy.acceptsConnections = true
            let outage = try await alertingEvents(of: second, count: count, from: events, within: .seconds(30))
            let outageLate = summary(outage.map { lateness(of: $0.event) * 1000 })
            print("GROUP OUTAGE \(count) members: broker killed \(String(format: "%.2f", earliest.timeIntervalSince(killedAt))) s before the alert, "
                + "back \(String(format: "%.1f", returnedAt.timeIntervalSince(killedAt))) s later; lateness p50 \(String(format: "%.1f", outageLate.p50)) ms, max \(String(format: "%.1f", outageLate.max)) ms")
            for (node, event) in outage {
                #expect(event.at < returnedAt, "\(node) alerted while the broker was away, and told it after its return")
                #expect(event.at > killedAt, "\(node) alerted after the broker went away")
                #expect(lateness(of: event) < 1, "\(node) alerted on time, by its own clock")
            }
        }
    }

    @Test("A member counts a group timer from sentAt near its clock, and from the command's arrival when sentAt is an hour off")
    func sentAtBounds() async throws {
        try await withMembers(2) { broker, _, members, _ in
            try await withTestClients { clients in
                let (requester, replies) = try clients.start(broker.clientConfiguration(clientID: "sentat-requester"), subscribing: ["sentat/reply"])
                try await replies.connected()
                /// Sends a group timer stamped `sentAt`; returns the instant each member counts from.
                func startDates(sentAt: Date) async throws -> [Date] {
                    let payload = ##"{"id":"\##(UUID().uuidString)","sentAt":"\##(AlarmJSON.string(from: sentAt))","replyTo":"sentat/reply","##
                        + ##""configuration":{"countdownDuration":{"preAlert":600},"attributes":{"presentation":{"alert":{"title":"Tea"}},"tintColor":"#FFFFFF"}}}"##
                    try requester.publish(MQTTMessage(topic: "alarmd/groups/\(Self.group)/cmd/schedule", payload: Array(payload.utf8), qos: 1))
                    var dates: [Date] = []
                    _ = try await replies.messages(on: "sentat/reply", within: .seconds(20)) { message in
                        if case .alarm(let document?)? = try? NodeReply.decode(message.payload),
                           case .countdown(let countdown)? = document.presentationState {
                            dates.append(countdown.startDate)
                        }
                        return dates.count == members.count
                    }
                    return dates
                }
                let near = Date().addingTimeInterval(-2)
                #expect(try await startDates(sentAt: near) == Array(repeating: AlarmJSON.date(from: AlarmJSON.string(from: near))!, count: members.count),
                        "2 s old: every member counts from it")
                let before = Date()
                let stale = try await startDates(sentAt: before.addingTimeInterval(-3600))
                #expect(stale.allSatisfy { $0 >= before.addingTimeInterval(-0.001) && $0 <= Date() }, "an hour old: each member counts from the arrival (\(stale))")
                for member in members {
                    #expect(member.log.contains("the command's sentAt is too far from this node's clock"), "\(member.node) says why in its log")
                }
            }
        }
    }

    @Test("alarmctl --group: timer, list and cancel --all reach every member, each answering with its node")
    func alarmctlGroup() async throws {
        try await withMembers(3) { broker, _, members, events in
            func alarmctl(_ arguments: String...) throws -> (status: Int32, output: String, errors: String) {
                let process = Process()
                process.executableURL = DaemonProcess.executable.deletingLastPathComponent().appending(path: "alarmctl")
                process.arguments = arguments
                process.environment = ["ALARMD_BROKER": "127.0.0.1:\(broker.port)", "PATH": "/usr/bin:/bin"]
                let output = Pipe(), errors = Pipe()
                process.standardOutput = output
                process.standardError = errors
                try process.run()
                let out = output.fileHandleForReading.readDataToEndOfFile()
                let err = errors.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
            }
            struct Report: Decodable {
                struct Answer: Decodable { var node: String; var ok: Bool; var alarm: AlarmDocument?; var alarms: [AlarmDocument]? }
                var group: String
                var answered: [Answer]?
                var requests: [Report]?
            }
            let timer = try alarmctl("--group", Self.group, "timer", "10m", "--title", "Tea", "--json")
            #expect(timer.status == 0, "\(timer.errors)")
            let scheduled = try JSONDecoder().decode(Report.self, from: Data(timer.output.utf8))
            #expect(Set(scheduled.answered?.map(\.node) ?? []) == Set(members.map(\.node)))
            #expect(scheduled.answered?.allSatisfy { $0.ok && $0.alarm?.group == Self.group } == true)
            let ids = Set(scheduled.answered?.compactMap(\.alarm?.id) ?? [])
            #expect(ids.count == 1, "the same alarm id on every member")

            let text = try alarmctl("--group", Self.group, "list")
            #expect(text.status == 0, "\(text.errors)")
            #expect(text.output.hasPrefix("group \(Self.group): 3 answered, 0 silent"), "\(text.output)")
            for member in members { #expect(text.output.contains(member.node)) }

            // A member's own alarm is not the group's: `cancel --all` leaves it.
            let own = try alarmctl("--node", members[1].node, "timer", "20m", "--title", "Own")
            #expect(own.status == 0, "\(own.errors)")
            let cancelled = try alarmctl("--group", Self.group, "cancel", "--all", "--json")
            #expect(cancelled.status == 0, "\(cancelled.errors)")
            let cancelReport = try JSONDecoder().decode(Report.self, from: Data(cancelled.output.utf8))
            #expect(cancelReport.answered?.count == 3 && cancelReport.answered?.allSatisfy(\.ok) == true, "\(cancelled.output)")
            let ownLeft = try alarmctl("--node", members[1].node, "list")
            #expect(ownLeft.output.contains("Own") && !ownLeft.output.contains("Tea"), "\(ownLeft.output)")

            let oneNodeOnly = try alarmctl("--group", Self.group, "status")
            #expect(oneNodeOnly.status == 2 && oneNodeOnly.errors.contains("--group works with"), "\(oneNodeOnly.errors)")
            let memberStatus = try alarmctl("--node", members[1].node, "status")
            #expect(memberStatus.output.contains("groups         \(Self.group)"), "a member's status names its groups: \(memberStatus.output)")

            // A group alarm that only the member about to stop still holds.
            #expect(try alarmctl("--group", Self.group, "timer", "10m", "--title", "Late").status == 0)
            for member in members.dropFirst() { #expect(try alarmctl("--node", member.node, "cancel", "Late").status == 0) }

            // A member that stops is reported as silent, by its last status.
            await members[0].terminate()
            let afterStop = try alarmctl("--group", Self.group, "--timeout", "2", "list")
            #expect(afterStop.status == 3)
            #expect(afterStop.output.contains("\(members[0].node)  no answer (offline"), "\(afterStop.output)")
            // What only it holds is no "nothing to do": the command cannot reach it (exit 3).
            let silentHolder = "node '\(members[0].node)' of group '\(Self.group)' did not answer"
            let cancelAll = try alarmctl("--group", Self.group, "--timeout", "2", "cancel", "--all")
            #expect(cancelAll.status == 3 && cancelAll.errors.contains(silentHolder), "\(cancelAll.errors)")
            #expect(cancelAll.output.contains("no alarm to cancel in group \(Self.group) among the members that answered"), "\(cancelAll.output)")
            let cancelLate = try alarmctl("--group", Self.group, "--timeout", "2", "cancel", "Late")
            #expect(cancelLate.status == 3 && cancelLate.errors.contains("`alarmctl --group \(Self.group) list` shows them; \(silentHolder), and may hold it"),
                    "\(cancelLate.errors)")
            let missed = try alarmctl("--group", Self.group, "--timeout", "2", "timer", "1h", "--title", "Missed")
            #expect(missed.status == 3 && missed.output.contains("an offline member misses this command (the broker keeps none for it): once it is back, run it again with --id "),
                    "\(missed.output)")

            // A broker that keeps no retained status for a wildcard subscription (RabbitMQ 3.10): the
            // stopped member cannot be named, and the report says so rather than "0 silent".
            func clearStatuses() async throws {
                try await withTestClients { clients in
                    let (publisher, published) = try clients.start(broker.clientConfiguration(clientID: "status-clearer"))
                    try await published.connected()
                    for member in members { try publisher.publish(MQTTMessage(topic: "alarmd/\(member.node)/status", payload: [], qos: 1, retain: true)) }
                }
                var cleared = Set<String>()
                _ = try await events.messages(on: "alarmd/+/status") { message in
                    if message.payload.isEmpty { cleared.insert(message.topic) }
                    return cleared.count == members.count
                }
            }
            try await clearStatuses()
            // A timer: the members' statuses change (their alarm counts), and come live, not retained.
            let blind = try alarmctl("--group", Self.group, "--timeout", "2", "timer", "5m", "--title", "Blind")
            #expect(blind.status == 0, "\(blind.errors)")
            #expect(blind.output.hasPrefix("group \(Self.group): 2 answered, 0 silent (members not known"), "\(blind.output)")

            // A member restarted without the group keeps the group's alarm, and says it is cut off from the group.
            await members[1].terminate()
            try await withDaemonProcess(broker: broker, node: members[1].node, stateDirectory: members[1].stateDirectory) { alone in
                try await alone.waitForLog("restored alarm came through a group this node no longer joins")
            }

            // Still no retained status: the `list` before the cancel picks the group's alarm, and the
            // cancel reaches the member that answered it (that it ends then is not timed here).
            try await clearStatuses()
            let cancelBlind = try alarmctl("--group", Self.group, "--timeout", "4", "cancel", "--all")
            #expect(cancelBlind.output.contains("\(members[2].node)  done (the alarm was removed)"), "\(cancelBlind.output)")
        }
    }
}
