import AlarmKit
import AlarmNode
import Foundation
import Logging
import Mosquitto
import MosquittoTestSupport
import Testing

/// Time and persistence (docs/time.md) in the real daemon. The time limit (per test,
/// long enough for the long form of the kill test) only turns a hang into a failure.
@Suite("alarmd time and persistence", .serialized, .timeLimit(.minutes(5)))
struct TimeAndPersistenceTests {
    /// Rounds of the kill test: a short form in CI; `ALARMD_KILL_ROUNDS` makes it longer.
    static let killRounds = Int(ProcessInfo.processInfo.environment["ALARMD_KILL_ROUNDS"] ?? "") ?? 8

    @Test("SIGKILL at random points of a command burst loses no acknowledged change and doubles nothing")
    func killDuringBursts() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-kill-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let nodeName = "kill-\(UUID().uuidString.prefix(6))"
                let node = try await NodeClient.connect(broker: broker, node: nodeName, clients: clients)
                var generator = SystemRandomNumberGenerator()
                var present: Set<UUID> = []     // acknowledged as scheduled and not cancelled
                var cancelled: Set<UUID> = []   // acknowledged as cancelled
                // Cancels sent but not acknowledged before a kill: the broker may still deliver
                // them to the next daemon (its session persists), so these may vanish later.
                var unacknowledgedCancels: Set<UUID> = []
                for round in 0..<Self.killRounds {
                    let mark = node.count
                    let daemon = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: directory)
                    do {
                        try await node.waitForMessage("online in round \(round)", after: mark) {
                            $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
                        }
                        // The state survived the last kill: exactly what was acknowledged.
                        let list = try await node.request("list")
                        let ids = Set(try AlarmJSON.decoder.decode([AlarmDocument].self, from: AlarmJSON.encoder.encode(list["alarms"]!)).map(\.id))
                        #expect(present.subtracting(unacknowledgedCancels).isSubset(of: ids), "round \(round): acknowledged alarms lost")
                        #expect(ids.isDisjoint(with: cancelled), "round \(round): cancelled alarms came back")
                        guard case .array(let all)? = list["alarms"] else { throw TestSupportError("no list") }
                        #expect(all.count == ids.count, "round \(round): an alarm is doubled")
                        // Alarms sent but not acknowledged before a kill may or may not be there.
                        present = ids.subtracting(cancelled)

                        // A burst of schedules and cancels, with a kill at a random point.
                        let burst = 30
                        let killAfter = Int.random(in: 3..<burst, using: &generator)
                        var sent: [(String, UUID)] = []
                        for index in 0..<burst {
                            if index % 4 == 3, let victim = present.randomElement(using: &generator) {
                                sent.append(("cancel", victim))
                            } else {
                                sent.append(("schedule", UUID()))
                            }
                        }
                        let replyBase = node.count
                        for (index, (operation, id)) in sent.enumerated() {
                            var fields: [String: JSONValue] = ["id": .string(id.uuidString), "replyTo": .string(node.replyTopic),
                                                               "correlationID": .number(Double(index))]
                            if operation == "schedule" { fields["configuration"] = configurationJSON(preAlert: 3600) }
                            try node.client.publish(MQTTMessage(topic: "\(node.topics.base)/cmd/\(operation)",
                                                                payload: Array(try AlarmJSON.encoder.encode(JSONValue.object(fields))), qos: 1))
                            if index == killAfter {
                                // Wait for some acknowledgement mid-burst, then kill without warning.
                                try await node.waitForMessage("a reply", after: replyBase) { $0.topic == node.replyTopic }
                                await daemon.kill()
                                break
                            }
                        }
                        await daemon.kill()
                        // The killed daemon's statuses may still be on their way; the next round
                        // must not take one for its daemon's "online" and send before it listens.
                        try await node.waitForWill(after: replyBase)
                        // Every reply that arrived is an acknowledgement that must hold.
                        let replies = node.received(after: replyBase).filter { $0.topic == node.replyTopic }
                        var acknowledged: Set<Int> = []
                        for reply in replies {
                            guard let object = NodeClient.object(reply.payload), object["ok"] == .bool(true),
                                  case .number(let index)? = object["correlationID"], Int(index) < sent.count else { continue }
                            acknowledged.insert(Int(index))
                            let (operation, id) = sent[Int(index)]
                            if operation == "schedule" { present.insert(id) } else { present.remove(id); cancelled.insert(id) }
                        }
                        for (index, (operation, id)) in sent.enumerated().prefix(killAfter + 1)
                        where operation == "cancel" && !acknowledged.contains(index) {
                            unacknowledgedCancels.insert(id)
                        }
                        // Every file always parses.
                        #expect(try StateStore(directory: directory.path, logger: Logger(label: "test")).load().problem == nil)
                    } catch {
                        print("alarmd log:\n\(daemon.log)")
                        await daemon.cleanUp()
                        throw error
                    }
                    await daemon.cleanUp()
                }
            }
        }
    }

    @Test("A garbage state file is kept aside and the node starts empty, saying so")
    func garbageStateFile() async throws {
        try await withBrokerAndFolder("garbage") { broker, clients, directory in
            let garbage = Data((0..<4096).map { _ in UInt8.random(in: 0...255) })
            try garbage.write(to: directory.appending(path: "state.json"))
            let nodeName = "garbage-\(UUID().uuidString.prefix(6))"
            let node = try await NodeClient.connect(broker: broker, node: nodeName, clients: clients)
            try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: directory) { _ in
                try await node.waitForMessage("status with the problem") {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["stateFileProblem"] != nil
                }
                let list = try await node.request("list")
                #expect(list["alarms"] == .array([]))
            }
            let aside = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("state.json.damaged-") }
            #expect(aside.count == 1)
            #expect(try Data(contentsOf: directory.appending(path: aside[0])) == garbage)
        }
    }

    @Test("A configuration file that became unusable: alarmd runs as it last started, saying why; with no such start, it exits 2")
    func unusableConfigurationFallsBack() async throws {
        try await withConfiguredNode("config", configuration: "[node]\ngroups = [\"house\"]\n") { broker, node, nodeName, config, directory in
            let state = directory.appending(path: "state")
            func online(after mark: Int) async throws -> [String: JSONValue] {
                let status = try await node.waitForMessage("online", after: mark) {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
                }
                return try #require(NodeClient.object(status.payload))
            }
            let first = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: state,
                                                    arguments: ["--config", config.path]) { _ in try await online(after: 0) }
            #expect(first["configurationProblem"] == nil)
            // Edited, with a typo, and never checked: the next start (a reboot) reads it.
            try Data("[node]\ngroups = [\"house\"]\ntimezone = \"Europe/Berlin\"\n".utf8).write(to: config)
            let mark = node.count
            let second = try await withDaemonProcess(broker: broker, node: nodeName, stateDirectory: state,
                                                     arguments: ["--config", config.path]) { _ in try await online(after: mark) }
            #expect(second["groups"] == .array([.string("house")]), "the groups of the start before")
            guard case .string(let problem)? = second["configurationProblem"] else { throw TestSupportError("no configurationProblem: \(second)") }
            #expect(problem.contains("node.timezone: unknown key (did you mean 'time-zone'?)"))
            #expect(problem.contains("alarmd runs with the configuration it last started with (\(state.path)/last-started.toml)"))
            // A state folder that never saw a start with a usable file: nothing to fall back on.
            let fresh = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: directory.appending(path: "fresh"),
                                                      arguments: ["--config", config.path])
            let deadline = ContinuousClock.now + .seconds(10)
            while fresh.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(await fresh.terminate() == 2, "\(fresh.log)")
        }
    }

    @Test("A file that reads but cannot start (a GPIO chip the machine lacks) runs the node as it last started, keeps that copy, and loses no damaged alarm")
    func unstartableConfigurationFallsBack() async throws {
        let good = "[node]\ngroups = [\"house\"]\n[hardware]\nmode = \"simulated\"\n"
        try await withConfiguredNode("unstartable", configuration: good) { broker, node, nodeName, config, directory in
            let state = directory.appending(path: "state")
            /// Starts alarmd, waits for its status online, runs `body`, stops it; returns the status and what `body` returned.
            func run<Result>(_ body: () async throws -> Result) async throws -> ([String: JSONValue], Result) {
                let mark = node.count
                let daemon = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: state,
                                                           arguments: ["--config", config.path], simulatedHardware: false)
                do {
                    let status = try await node.waitForMessage("online", after: mark) {
                        $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
                    }
                    let result = try await body()
                    #expect(await daemon.terminate() == 0, "\(daemon.log)")
                    return (try #require(NodeClient.object(status.payload)), result)
                } catch {
                    _ = await daemon.terminate()
                    throw TestSupportError("\(error)\n\(daemon.log)")
                }
            }
            let weekly = #"{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["mon","fri"]}}}"#
            let (first, scheduled) = try await run { try await node.request("schedule", ["configuration": configurationJSON(schedule: weekly, title: "Wake")]) }
            #expect(first["configurationProblem"] == nil)
            guard case .string(let alarm)? = scheduled["alarm"]?["id"] else { throw TestSupportError("schedule gave no alarm: \(scheduled)") }
            // Edited: the buzzer on a chip this machine does not have. It reads, but cannot start; and
            // a power cut damaged the alarm's file meanwhile.
            try Data("[node]\ngroups = [\"kitchen\"]\n[hardware]\nmode = \"gpio\"\nchip = \"no-such-chip\"\n".utf8).write(to: config)
            try Data("{\"schema".utf8).write(to: state.appending(path: "alarms/\(alarm).json"))
            let (second, (restored, list)) = try await run {
                let restored = try await node.waitForMessage("status naming the restored alarm") {
                    $0.topic == node.topics.status && "\(NodeClient.object($0.payload)?["stateFileProblem"] ?? .null)".contains("came back")
                }
                return (restored, try await node.request("list"))
            }
            #expect(second["groups"] == .array([.string("house")]), "the groups of the start before")
            guard case .string(let problem)? = second["configurationProblem"] else { throw TestSupportError("no configurationProblem: \(second)") }
            #expect(problem.contains("no-such-chip"))
            #expect(problem.contains("alarmd runs with the configuration it last started with (\(state.path)/last-started.toml)"))
            let stateFileProblem = "\(NodeClient.object(restored.payload)?["stateFileProblem"] ?? .null)"
            #expect(stateFileProblem.contains("alarm \(alarm) came back from its retained copy"))
            guard case .array(let alarms)? = list["alarms"] else { throw TestSupportError("list gave no alarms: \(list)") }
            #expect(alarms.map { $0["id"] } == [.string(alarm)], "the damaged alarm, back from the broker")
            // The copy is still the one that started, for the next start that needs it.
            #expect(try String(contentsOf: state.appending(path: "last-started.toml"), encoding: .utf8) == good)
        }
    }

    @Test("SIGHUP re-reads the configured time zone: relative schedules move, the status says so, by the name configured")
    func timeZoneReload() async throws {
        // UTC, which Foundation calls GMT: the status names the zone as the file does.
        try await withConfiguredNode("zone", configuration: "[node]\ntime-zone = \"UTC\"\n") { broker, node, nodeName, config, directory in
            let daemon = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: directory,
                                                       timeZone: nil, arguments: ["--config", config.path])
            do {
                try await node.waitForMessage("online in UTC") {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["timeZone"] == .string("UTC")
                }
                let everyDay = #"{"relative":{"time":{"hour":7,"minute":0},"repeats":{"weekly":["mon","tue","wed","thu","fri","sat","sun"]}}}"#
                let reply = try await node.request("schedule", ["configuration": configurationJSON(schedule: everyDay)])
                let utc = try AlarmJSON.decoder.decode(AlarmDocument.self, from: AlarmJSON.encoder.encode(reply["alarm"]!))
                try Data("[node]\ntime-zone = \"America/Los_Angeles\"\n".utf8).write(to: config)
                let mark = node.count
                daemon.signal(SIGHUP)
                try await node.waitForMessage("status in Los Angeles", after: mark) {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["timeZone"] == .string("America/Los_Angeles")
                }
                let moved = try await node.document(utc.id, after: mark) { $0.nextAlertDate != utc.nextAlertDate }
                let losAngeles = try #require(TimeZone(identifier: "America/Los_Angeles"))
                #expect(ScheduleMath.localTime(of: try #require(moved.nextAlertDate), in: losAngeles) == .init(hour: 7, minute: 0))
                // A change that needs a restart is named by its section.
                // Back to UTC, by that name again.
                let before = node.count
                try Data("[node]\ntime-zone = \"UTC\"\n[limits]\nmax-alarms = 5\n".utf8).write(to: config)
                daemon.signal(SIGHUP)
                try await node.waitForMessage("status in UTC", after: before) {
                    $0.topic == node.topics.status && NodeClient.object($0.payload)?["timeZone"] == .string("UTC")
                }
                let deadline = ContinuousClock.now + .seconds(10)
                while !daemon.log.contains("sections=limits"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                #expect(daemon.log.contains("sections=limits [AlarmNode] configuration changed beyond the time zone: restart alarmd to apply it"))
            } catch {
                print("alarmd log:\n\(daemon.log)")
                await daemon.cleanUp()
                throw error
            }
            await daemon.cleanUp()
        }
    }

    @Test("SIGHUP says which edits of the file a command-line flag overrides, and how to apply them")
    func reloadNamesCommandLineOverrides() async throws {
        try await withConfiguredNode("override", configuration: "[node]\ntime-zone = \"Europe/Berlin\"\n") { broker, node, nodeName, config, directory in
            // DaemonProcess starts alarmd with --time-zone Europe/Berlin, as a unit's drop-in might.
            let daemon = try await DaemonProcess.start(broker: broker, node: nodeName, stateDirectory: directory,
                                                       arguments: ["--config", config.path, "--max-alarms", "7"])
            do {
                try await node.waitForMessage("online") { $0.topic == node.topics.status && NodeClient.object($0.payload)?["state"] == .string("online") }
                try Data("[node]\ntime-zone = \"America/Los_Angeles\"\n[limits]\nmax-alarms = 5\n".utf8).write(to: config)
                daemon.signal(SIGHUP)
                try await daemon.waitForLog("restart alarmd")
                #expect(daemon.log.contains("node.time-zone: America/Los_Angeles from the file or default, Europe/Berlin by --time-zone"), "\(daemon.log)")
                #expect(daemon.log.contains("limits.max-alarms: 5 from the file or default, 7 by --max-alarms"), "\(daemon.log)")
                // Nothing the file says needs a restart: the flags keep both as they are.
                #expect(!daemon.log.contains("configuration changed beyond the time zone"), "\(daemon.log)")
            } catch {
                print("alarmd log:\n\(daemon.log)")
                await daemon.cleanUp()
                throw error
            }
            await daemon.cleanUp()
        }
    }
}
