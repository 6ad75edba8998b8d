import AlarmKit
import Foundation
import Mosquitto
import MosquittoTestSupport
import Testing

/// The built `alarmctl` against the built `alarmd` and a real mosquitto, as separate processes.
/// The time limit (per test) only turns a hang into a failure instead of stalling CI.
@Suite("alarmctl end to end", .serialized, .timeLimit(.minutes(5)))
struct EndToEndTests {
    /// A running node: its broker, its id, and an MQTT observer of its topics.
    struct Node {
        let broker: TestBroker
        let id: String
        let daemon: ChildProcess
        let observerClient: MQTTClient
        let observer: EventRecorder
        var topics: NodeTopics { NodeTopics(node: id) }

        /// Runs alarmctl against this node (through ALARMD_BROKER and ALARMD_NODE) and waits for it.
        func alarmctl(_ arguments: String...) async throws -> CommandResult {
            try await EndToEndTests.alarmctl(arguments, environment: ["ALARMD_BROKER": "127.0.0.1:\(broker.port)", "ALARMD_NODE": id])
        }

        /// Waits for the retained document of alarm `id` in `state`.
        func waitForAlarm(_ id: UUID, state: Alarm.State) async throws {
            _ = try await observer.next("alarm \(id) \(state)", within: .seconds(15)) { event -> Bool? in
                guard case .message(let message) = event, message.topic == topics.alarm(id),
                      let document = try? AlarmJSON.decoder.decode(AlarmDocument.self, from: Data(message.payload)),
                      document.state == state else { return nil }
                return true
            }
        }
    }

    struct OperationOutcome: Decodable {
        struct Failure: Decodable { var code: String; var message: String; var exitStatus: Int }
        var id: String
        var ok: Bool
        var alarm: AlarmDocument?
        var error: Failure?
        var nothingToDo: Bool?
    }

    struct CommandFailure: Decodable {
        var ok: Bool
        var error: OperationOutcome.Failure
    }

    /// Runs the built alarmctl and waits for it; its standard output and error are read from files,
    /// unless they go to `output` or `errorOutput`.
    static func alarmctl(
        _ arguments: [String], environment: [String: String] = [:], output: FileHandle? = nil, errorOutput: FileHandle? = nil
    ) async throws -> CommandResult {
        let child = try await ChildProcess.start(
            try BuiltExecutable.url("alarmctl"), arguments, environment: environment, output: output, errorOutput: errorOutput)
        do {
            let status = try await child.waitForExit()
            let result = CommandResult(status: status, output: child.standardOutput, errorOutput: child.standardError)
            await child.stop()
            return result
        } catch {
            await child.stop()
            throw error
        }
    }

    /// Starts a broker and alarmd (simulated hardware, Europe/Berlin, its own state folder holding
    /// `stateFiles`, and `configuration` as its config file), waits until the node is online, runs
    /// `body`, and stops and removes everything, also on failure.
    func withNode(configuration: String = "", stateFiles: [String: String] = [:], _ body: (Node) async throws -> Void) async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, observer) = try clients.start(broker.clientConfiguration(clientID: "observer-\(UUID().uuidString.prefix(8))"))
                let id = "ctl-\(UUID().uuidString.prefix(8))"
                try client.subscribe("\(NodeTopics(node: id).base)/#", qos: 1)
                let stateDirectory = FileManager.default.temporaryDirectory.appending(path: "alarmctl-node-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
                // Removed on every way out, also when the configuration or alarmd's start fails.
                defer { try? FileManager.default.removeItem(at: stateDirectory) }
                for (path, contents) in stateFiles {
                    let file = stateDirectory.appending(path: path)
                    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data(contents.utf8).write(to: file)
                }
                let configurationFile = stateDirectory.appending(path: "alarmd.toml")
                try Data(configuration.utf8).write(to: configurationFile)
                let daemon = try await ChildProcess.start(try BuiltExecutable.url("alarmd"), [
                    "--config", configurationFile.path, "--broker", "127.0.0.1:\(broker.port)", "--node", id,
                    "--state-dir", stateDirectory.path, "--simulate-hardware", "--time-zone", "Europe/Berlin",
                ])
                let node = Node(broker: broker, id: id, daemon: daemon, observerClient: client, observer: observer)
                do {
                    _ = try await observer.next("the node's online status") { event -> Bool? in
                        guard case .message(let message) = event, message.topic == node.topics.status,
                              let status = try? AlarmJSON.decoder.decode(NodeStatus.self, from: Data(message.payload)),
                              status.isOnline else { return nil }
                        return true
                    }
                    try await body(node)
                } catch {
                    Issue.record("alarmd's output:\n\(daemon.standardOutput)\(daemon.standardError)")
                    await daemon.stop()
                    throw error
                }
                await daemon.stop()
            }
        }
    }

    @Test("Schedule a timer, an alarm and a date; list; snooze, pause, resume; cancel; preview agrees with the node")
    func lifecycle() async throws {
        try await withNode { node in
            let timer = try await node.alarmctl("timer", "1s", "--title", "Tea", "--snooze", "5m", "--json")
            #expect(timer.status == 0, "\(timer.errorOutput)")
            let tea = try timer.json(AlarmDocument.self)
            #expect(tea.state == .countdown)
            #expect(tea.configuration.countdownDuration == .init(preAlert: 1, postAlert: 300))
            #expect(tea.configuration.attributes.presentation.alert.title == "Tea")

            let weekly = try await node.alarmctl("alarm", "07:00", "mon,wed,fri", "--title", "Wake up", "--json")
            #expect(weekly.status == 0, "\(weekly.errorOutput)")
            let wakeUp = try weekly.json(AlarmDocument.self)
            #expect(wakeUp.configuration.schedule == .relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday, .wednesday, .friday]))))
            #expect(wakeUp.configuration.countdownDuration?.postAlert == 540)

            let preview = try await node.alarmctl("preview", "07:00 mon,wed,fri", "--count", "3", "--time-zone", "Europe/Berlin", "--json")
            #expect(preview.status == 0)
            let dates = try preview.json([String].self)
            #expect(dates.count == 3)
            #expect(dates.first == wakeUp.nextAlertDate.map(AlarmJSON.string(from:)))

            let fixed = try await node.alarmctl("alarm", "2036-12-24T18:00", "--title", "Presents", "--json")
            #expect(fixed.status == 0, "\(fixed.errorOutput)")
            #expect(try fixed.json(AlarmDocument.self).configuration.schedule == .fixed(AlarmJSON.date(from: "2036-12-24T17:00:00Z")!))

            try await node.waitForAlarm(tea.id, state: .alerting)
            let listed = try await node.alarmctl("list", "--json")
            let documents = try listed.json([AlarmDocument].self)
            #expect(documents.map(\.id) == [tea.id, wakeUp.id, try fixed.json(AlarmDocument.self).id])
            #expect(documents.first?.state == .alerting)
            let table = try await node.alarmctl("list")
            #expect(table.output.contains("\(tea.id.uuidString.prefix(8))  timer  Tea"))
            #expect(table.output.contains("alerting"))

            let snoozed = try await node.alarmctl("snooze", String(tea.id.uuidString.prefix(6)).lowercased(), "--json")
            #expect(snoozed.status == 0, "\(snoozed.errorOutput)")
            let snoozedTea = try #require(try snoozed.json([OperationOutcome].self).first?.alarm)
            #expect(snoozedTea.state == .countdown)
            guard case .countdown(let countdown)? = snoozedTea.presentationState else {
                Issue.record("no countdown after snooze")
                return
            }
            #expect(countdown.totalCountdownDuration == 300)

            let paused = try await node.alarmctl("pause", String(tea.id.uuidString.prefix(8)))
            #expect(paused.status == 0)
            #expect(paused.output.hasPrefix("paused timer \(tea.id.uuidString.prefix(8)) \"Tea\": paused"))
            let resumed = try await node.alarmctl("resume", tea.id.uuidString, "--json")
            #expect(try resumed.json([OperationOutcome].self).first?.alarm?.state == .countdown)

            let shown = try await node.alarmctl("show", String(wakeUp.id.uuidString.prefix(8)))
            #expect(shown.output.contains("schedule    07:00 mon,wed,fri"))

            let cancelled = try await node.alarmctl("cancel", "--all", "--json")
            #expect(cancelled.status == 0)
            let outcomes = try cancelled.json([OperationOutcome].self)
            #expect(outcomes.count == 3 && outcomes.allSatisfy { $0.ok && $0.alarm == nil })
            #expect(try await node.alarmctl("list", "--json").json([AlarmDocument].self).isEmpty)
        }
    }

    @Test("An alarm lost to a damaged state file: list says so beside the table, status names the file")
    func damagedStateFile() async throws {
        let lost = "AAAA0000-0000-4000-8000-000000000003"
        try await withNode(stateFiles: ["alarms/\(lost).json": "{\"id\":"]) { node in
            let list = try await node.alarmctl("list")
            #expect(list.status == 0 && list.output.contains("no alarms"))
            #expect(list.errorOutput.contains("alarmctl: warning: the state file") && list.errorOutput.contains("\(lost).json is damaged"), "\(list.errorOutput)")
            #expect(try await node.alarmctl("status").output.contains("\(lost).json.damaged-"))
        }
    }

    @Test("Exit statuses and messages: refused, not found, ambiguous, usage, unreachable, offline")
    func failures() async throws {
        try await withNode { node in
            let first = "AAAA0000-0000-4000-8000-000000000001", second = "AAAA0000-0000-4000-8000-000000000002"
            #expect(try await node.alarmctl("timer", "10m", "--id", first).status == 0)
            #expect(try await node.alarmctl("timer", "10m", "--id", second).status == 0)

            let ambiguous = try await node.alarmctl("cancel", "aaaa")
            #expect(ambiguous.status == 4)
            #expect(ambiguous.errorOutput.contains("'aaaa' matches 2 alarms"))

            let missing = try await node.alarmctl("show", "bbbb", "--json")
            #expect(missing.status == 4)
            #expect(try missing.json(CommandFailure.self).error.code == "notFound")

            let refused = try await node.alarmctl("stop", first, "--json")
            #expect(refused.status == 1)
            let outcome = try #require(try refused.json([OperationOutcome].self).first)
            #expect(!outcome.ok && outcome.error?.code == "invalidState" && outcome.error?.exitStatus == 1)
            #expect(refused.errorOutput.contains("needs an alarm in state alerting"))

            let usage = try await node.alarmctl("alarm", "25:00")
            #expect(usage.status == 2)
            #expect(usage.errorOutput.contains("HH:MM [DAYS]"))
            #expect(try await node.alarmctl("list", "--no-such-option").status == 2)

            let unreachable = try await EndToEndTests.alarmctl(["list", "--broker", "127.0.0.1:\(try TestBroker.freePort())", "--node", node.id])
            #expect(unreachable.status == 3)
            #expect(unreachable.errorOutput.contains("refused the connection"))

            // A node is found by its id and its topic prefix: a wrong prefix is named as what to check.
            for elsewhere in [try await node.alarmctl("status", "--prefix", "elsewhere", "--timeout", "1"),
                              try await node.alarmctl("list", "--prefix", "elsewhere", "--timeout", "1")] {
                #expect(elsewhere.status == 3)
                #expect(elsewhere.errorOutput.contains("the topic prefix (--prefix, ALARMD_PREFIX)"), "\(elsewhere.errorOutput)")
            }

            #expect(await node.daemon.stop() == 0)
            // Every command says it in the same words, with since when, as docs/alarmctl.md shows.
            for offline in [try await node.alarmctl("list"), try await node.alarmctl("status"), try await node.alarmctl("timer", "10m")] {
                #expect(offline.status == 3)
                #expect(offline.errorOutput.contains("node '\(node.id)' is offline since 20"), "\(offline.errorOutput)")
            }
        }
    }

    @Test("Two cancel --all at once: an alarm the other removed first is nothing to do, no failure")
    func concurrentAll() async throws {
        try await withNode { node in
            for id in ["AAAA0000-0000-4000-8000-000000000001", "AAAA0000-0000-4000-8000-000000000002"] {
                #expect(try await node.alarmctl("timer", "10m", "--id", id).status == 0)
            }
            // The node answers both lists before either run sends a cancel: each run then cancels both alarms.
            kill(node.daemon.processIdentifier, SIGSTOP)
            async let first = node.alarmctl("cancel", "--all", "--json")
            async let second = node.alarmctl("cancel", "--all", "--json")
            var requesters = Set<String>()
            while requesters.count < 2 {
                requesters.insert(try await node.observer.next("a list request") { event -> String? in
                    guard case .message(let message) = event, message.topic == node.topics.command(.list) else { return nil }
                    return message.responseTopic ?? message.payloadString ?? ""
                })
            }
            kill(node.daemon.processIdentifier, SIGCONT)
            let results = try await [first, second]
            #expect(results.map(\.status) == [0, 0], "\(results.map(\.errorOutput))")
            let outcomes = try results.flatMap { try $0.json([OperationOutcome].self) }
            #expect(outcomes.count == 4 && outcomes.filter(\.ok).count == 2 && outcomes.filter { $0.nothingToDo == true }.count == 2)
        }
    }

    @Test("On a node that asks first, scheduling waits for its stop button and says how long the node's prompt lasts")
    func authorizationPrompt() async throws {
        try await withNode(configuration: "[node]\nauthorization = \"prompt\"\n[hardware]\nprompt-duration = 45\n") { node in
            let scheduling = try await ChildProcess.start(
                try BuiltExecutable.url("alarmctl"), ["timer", "1m", "--title", "Tea", "--json"],
                environment: ["ALARMD_BROKER": "127.0.0.1:\(node.broker.port)", "ALARMD_NODE": node.id])
            do {
                // The prompt chirps and blinks: the simulated LED lights while nothing alerts.
                _ = try await node.observer.next("the prompt's LED") { event -> Bool? in
                    guard case .message(let message) = event, message.topic == node.topics.simulatedOutputs,
                          message.payloadString?.contains("\"led\":true") == true else { return nil }
                    return true
                }
                let press = MQTTMessage(topic: node.topics.simulatedPress, string: "{\"button\":\"stop\",\"duration\":0.1}", qos: 1)
                try node.observerClient.publish(press)
                #expect(try await scheduling.waitForExit() == 0)
                #expect(scheduling.standardError.contains("press its stop button within 45 s"))
                let document = try JSONDecoder().decode(AlarmDocument.self, from: Data(scheduling.standardOutput.utf8))
                #expect(document.state == .countdown)
                await scheduling.stop()
            } catch {
                await scheduling.stop()
                throw error
            }
            let status = try await node.alarmctl("status", "--json")
            let reported = try status.json(NodeStatus.self)
            #expect(reported.authorization == .authorized)
            #expect(reported.authorizationPrompt == 45)
        }
    }

    @Test("watch piped into head: once head has its lines, watch ends quietly, with no change to print", arguments: [["watch"], ["watch", "--json"]])
    func watchIntoHead(arguments: [String]) async throws {
        try await withNode { node in
            // As a user types `alarmctl watch | head -1`: the test reads the first line from the
            // pipe, then closes its end. Nothing changes on the node afterwards. (alarmctl itself,
            // not a shell pipeline: a watch that outlived its shell would outlive the test too.)
            let pipe = Pipe()
            let watcher = try await ChildProcess.start(
                try BuiltExecutable.url("alarmctl"), arguments,
                environment: ["ALARMD_BROKER": "127.0.0.1:\(node.broker.port)", "ALARMD_NODE": node.id], output: pipe.fileHandleForWriting)
            try pipe.fileHandleForWriting.close()
            do {
                let reader = pipe.fileHandleForReading.fileDescriptor
                _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
                // Closed once watch has printed and then been quiet for half a second: closed
                // between two of its first lines, the second write's EPIPE would end it anyway.
                var received: [UInt8] = []
                var lastOutput = ContinuousClock.now
                let deadline = lastOutput + .seconds(10)
                while !received.contains(UInt8(ascii: "\n")) || ContinuousClock.now - lastOutput < .milliseconds(500) {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let count = read(reader, &buffer, buffer.count)
                    if count > 0 {
                        received += buffer[..<count]
                        lastOutput = ContinuousClock.now
                        continue
                    }
                    guard ContinuousClock.now < deadline else { throw TestSupportError("no quiet line from alarmctl \(arguments) within 10 s") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                try pipe.fileHandleForReading.close()
                #expect(try await watcher.waitForExit(within: .seconds(10)) == 0)
                #expect(watcher.standardError == "")
                await watcher.stop()
            } catch {
                await watcher.stop()
                throw error
            }
        }
    }

    @Test("watch --json follows the retained state and the events, and quits on Ctrl-C")
    func watch() async throws {
        try await withNode { node in
            let watcher = try await ChildProcess.start(
                try BuiltExecutable.url("alarmctl"), ["watch", "--json"],
                environment: ["ALARMD_BROKER": "127.0.0.1:\(node.broker.port)", "ALARMD_NODE": node.id])
            do {
                try await watcher.waitForOutput("the node's status") { $0.contains("{\"status\":") }
                let timer = try await node.alarmctl("timer", "5m", "--title", "Eggs", "--json")
                let id = try timer.json(AlarmDocument.self).id
                try await watcher.waitForOutput("the scheduled event") { $0.contains("\"event\":\"scheduled\"") && $0.contains(id.uuidString) }
                try await watcher.waitForOutput("the alarm's document") { output in
                    output.split(separator: "\n").contains { line in
                        guard let update = try? JSONDecoder().decode([String: [AlarmDocument]].self, from: Data(line.utf8)) else { return false }
                        return update["alarms"]?.first?.id == id
                    }
                }
                kill(watcher.processIdentifier, SIGINT)
                #expect(try await watcher.waitForExit(within: .seconds(10)) == 0)
                await watcher.stop()
            } catch {
                await watcher.stop()
                throw error
            }
        }
    }
}
