import AlarmKit
import AlarmctlCore
import Foundation
import Mosquitto
import MosquittoTestSupport
import Testing

/// The built `alarmctl` on commands that need no node: how it reports usage errors, and what it
/// does when its output cannot be written.
@Suite("alarmctl without a node", .timeLimit(.minutes(1)))
struct CommandLineTests {
    /// A pipe whose reading end is already closed, as after `| head -2` has read its lines.
    private static func pipeWithoutReader() throws -> FileHandle {
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        return pipe.fileHandleForWriting
    }

    @Test("With --json, the parser's own errors are one JSON document on standard output, the text on standard error",
          arguments: [
              (["timer", "--json"], "Missing expected argument '<duration>"),
              (["timer", "10m", "--bogus", "--json"], "Unknown option '--bogus'"),
              (["--json", "preview", "07:00", "--count", "many"], "The value 'many' is invalid for '--count <count>'"),
              (["stop", "--json"], "give an alarm id"),
              (["--json", "--node", "list", "tmier", "10m"], "'tmier' is not a command: use one of timer, alarm, list"),
              (["--group", "house", "--json"], "no command after '--group house --json': add one of timer, alarm, list"),
              (["timer", "-5m", "--json"], "'-5m' is negative: durations and times count forward"),
          ])
    func parserErrorsAsJSON(arguments: [String], message: String) async throws {
        let result = try await EndToEndTests.alarmctl(arguments)
        #expect(result.status == ExitStatus.usage.rawValue)
        let failure = try result.json(EndToEndTests.CommandFailure.self)
        #expect(!failure.ok)
        #expect(failure.error.code == "usage")
        #expect(failure.error.exitStatus == Int(ExitStatus.usage.rawValue))
        #expect(failure.error.message.contains(message))
        #expect(!failure.error.message.contains("Usage:"), "the JSON message is the error, not the help")
        #expect(result.errorOutput.contains(message))
    }

    @Test("--version prints alarmd's version")
    func version() async throws {
        let result = try await EndToEndTests.alarmctl(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "\(AlarmdVersion.current)\n")
    }

    @Test("preview takes the options that name a node, before or after its name, as an alias adds them, and needs no node")
    func previewTakesConnectionOptions() async throws {
        let options = ["--broker", "127.0.0.1:1", "--node", "vm", "--timeout", "1"]
        let preview = ["preview", "07:00", "--count", "1", "--time-zone", "UTC", "--from", "2026-01-01T00:00Z", "--json"]
        for arguments in [options + preview, preview + options] {
            let result = try await EndToEndTests.alarmctl(arguments)
            #expect(result.status == 0, "\(arguments): \(result.errorOutput)")
            #expect(try result.json([String].self) == ["2026-01-01T07:00:00.000Z"])
        }
    }

    @Test("localhost reaches a broker on 127.0.0.1 when /etc/hosts gives ::1 first, as Debian's does")
    func localhostWithIPv6First() async throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            print("SKIPPED CommandLineTests.localhostWithIPv6First: a private /etc/hosts needs root and unshare(1)")
            return
        }
        let hosts = FileManager.default.temporaryDirectory.appending(path: "alarmd-hosts-\(UUID().uuidString)")
        try "::1 localhost\n127.0.0.1 localhost\n".write(to: hosts, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: hosts) }
        try await TestBroker.withBroker { broker in
            let script = "mount --bind \(hosts.path) /etc/hosts && exec \(try BuiltExecutable.url("alarmctl").path) \"$@\""
            let child = try await ChildProcess.start(URL(filePath: "/usr/bin/unshare"),
                                                     ["-m", "sh", "-c", script, "sh", "status", "--broker", "localhost:\(broker.port)", "--node", "nobody", "--timeout", "1"])
            _ = try await child.waitForExit()
            let errorOutput = child.standardError
            await child.stop()
            #expect(errorOutput.contains("no status from node 'nobody'"), "it reached the broker: \(errorOutput)")
        }
    }

    @Test("A status's texts, anyone's to publish, cannot drive the terminal on standard output or error")
    func statusTextsArePrintable() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, _) = try clients.start(broker.clientConfiguration(clientID: "hostile"))
                let status = NodeStatus(state: "online", alarms: 0, stateFileProblem: "\u{1B}[2J\u{1B}]0;owned\u{7}",
                                        configurationProblem: "fine\r\u{1B}[31mforged")
                try client.publish(MQTTMessage(topic: NodeTopics(node: "n").status, payload: try AlarmJSON.encode(status), qos: 1, retain: true))
                let result = try await EndToEndTests.alarmctl(["status", "--broker", "127.0.0.1:\(broker.port)", "--node", "n"])
                #expect(result.status == 0 && result.output.contains("state file     \u{FFFD}[2J"), "\(result.output)\(result.errorOutput)")
                #expect(!(result.output + result.errorOutput).unicodeScalars.contains { $0 != "\n" && $0.properties.generalCategory == .control })
            }
        }
    }

    @Test("--json gives a status's texts as they are: a DEL or a C1 control, which JSON does not escape, is not replaced as in text")
    func jsonKeepsTexts() async throws {
        try await TestBroker.withBroker { broker in
            try await withTestClients { clients in
                let (client, _) = try clients.start(broker.clientConfiguration(clientID: "publisher"))
                let status = NodeStatus(state: "online", alarms: 0, stateFileProblem: "a\u{7F}b\u{85}c\u{1B}")
                try client.publish(MQTTMessage(topic: NodeTopics(node: "n").status, payload: try AlarmJSON.encode(status), qos: 1, retain: true))
                let result = try await EndToEndTests.alarmctl(["status", "--json", "--broker", "127.0.0.1:\(broker.port)", "--node", "n"])
                let decoded = try JSONDecoder().decode(NodeStatus.self, from: Data(result.output.utf8))
                #expect(decoded.stateFileProblem == "a\u{7F}b\u{85}c\u{1B}", "\(result.output)")
                #expect(!result.output.unicodeScalars.contains("\u{1B}"), "the ESC is escaped by JSON")
            }
        }
    }

    @Test("A negative --timeout is called so")
    func negativeTimeout() async throws {
        let result = try await EndToEndTests.alarmctl(["list", "--timeout", "-1"])
        #expect(result.status == ExitStatus.usage.rawValue)
        #expect(result.errorOutput.contains("--timeout -1 is negative: give seconds from 0.1 to 600"), "\(result.errorOutput)")
    }

    @Test("A negative --snooze, --pre-alert or --count is called so, without advice about titles",
          arguments: [(["timer", "10m", "--snooze", "-5m"], "--snooze -5m is negative: give a duration from 1s to 7d"),
                      (["alarm", "07:00", "--pre-alert", "-5m"], "--pre-alert -5m is negative: give a duration from 1s to 7d"),
                      (["preview", "07:00", "--count", "-1"], "--count -1 is negative: list 1 to 1000 dates")])
    func negativeOptionValue(arguments: [String], complaint: String) async throws {
        let result = try await EndToEndTests.alarmctl(arguments)
        #expect(result.status == ExitStatus.usage.rawValue)
        #expect(result.errorOutput.contains(complaint), "\(result.errorOutput)")
        #expect(!result.errorOutput.contains("--title"), "\(result.errorOutput)")
    }

    @Test("--group and --node exclude each other")
    func groupAndNode() async throws {
        let result = try await EndToEndTests.alarmctl(["list", "--group", "house", "--node", "kitchen"])
        #expect(result.status == ExitStatus.usage.rawValue)
        #expect(result.errorOutput.contains("--group and --node 'kitchen' exclude each other"))
    }

    @Test("Without --json, a parser error is text on standard error only")
    func parserErrorAsText() async throws {
        let result = try await EndToEndTests.alarmctl(["timer", "10m", "--bogus"])
        #expect(result.status == ExitStatus.usage.rawValue)
        #expect(result.output == "")
        #expect(result.errorOutput.contains("Unknown option '--bogus'"))
        #expect(result.errorOutput.contains("Usage: alarmctl timer"))
    }

    @Test("An address where something else than an MQTT broker listens is called so, with what to check",
          arguments: [
              // Shorter than the packet its first bytes announce ("HT"): the connection ends inside it.
              ("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
               "closed the connection without answering the MQTT CONNECT"),
              ("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n" + String(repeating: "<p>Bad request</p>\n", count: 20),
               "answered the MQTT CONNECT with something that is not MQTT"),
          ])
    func notABroker(answer: String, complaint: String) async throws {
        let listener = try NotABroker(answer: Array(answer.utf8))
        defer { listener.close() }
        let address = "127.0.0.1:\(listener.port)"
        let result = try await EndToEndTests.alarmctl(["list", "--broker", address, "--node", "vm", "--timeout", "20"])
        #expect(result.status == ExitStatus.unreachable.rawValue)
        #expect(result.errorOutput.hasPrefix("alarmctl: \(address) \(complaint): it may not be an MQTT broker; "
            + "check that this host and port are the broker's MQTT listener"))
        #expect(result.errorOutput.hasSuffix("[--broker or ALARMD_BROKER]\n"))
        #expect(!result.errorOutput.contains("Success"))
    }

    @Test("A listener that never answers the MQTT CONNECT: at the timeout, the broker never completed the MQTT connection",
          arguments: [["list", "--node", "vm"], ["status", "--node", "vm"], ["--group", "house", "list"]])
    func silentListener(arguments: [String]) async throws {
        let listener = try NotABroker(answer: nil)
        defer { listener.close() }
        let address = "127.0.0.1:\(listener.port)"
        let result = try await EndToEndTests.alarmctl(arguments + ["--broker", address, "--timeout", "1"])
        #expect(result.status == ExitStatus.unreachable.rawValue)
        #expect(result.errorOutput.hasPrefix("alarmctl: \(address) did not complete the MQTT connection within 1.0 seconds (no CONNACK): "
            + "it may not be an MQTT broker"), "\(result.errorOutput)")
    }

    @Test("A CA file that holds no certificate is called so, with the TLS options to check")
    func caFileWithoutCertificate() async throws {
        let listener = try NotABroker(answer: nil)
        defer { listener.close() }
        let file = FileManager.default.temporaryDirectory.appending(path: "alarmctl-not-a-ca-\(UUID().uuidString).pem")
        try Data("not a certificate\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await EndToEndTests.alarmctl(
            ["list", "--broker", "127.0.0.1:\(listener.port)", "--node", "vm", "--ca-file", file.path, "--timeout", "20"])
        #expect(result.status == ExitStatus.unreachable.rawValue)
        // libmosquitto logs why ("Unable to load CA certificates, check cafile …"), then fails the connection: either one comes first.
        #expect(result.errorOutput.contains("Unable to load CA certificates") || result.errorOutput.contains("TLS failed"), "\(result.errorOutput)")
        #expect(result.errorOutput.hasSuffix("or ALARMD_CA_FILE]\n"), "\(result.errorOutput)")
    }

    @Test("Standard output to a pipe that nobody reads any more: a quiet exit, no crash")
    func outputReaderGone() async throws {
        let result = try await EndToEndTests.alarmctl(["preview", "07:00 daily", "--count", "1000"], output: try Self.pipeWithoutReader())
        #expect(result.status == ExitStatus.success.rawValue)
        #expect(result.errorOutput == "")
    }

    @Test("Standard error to a pipe that nobody reads: the usage error's exit status, no crash",
          arguments: [["timer", "10"], ["timer"], ["timer", "10", "--json"]])
    func errorReaderGone(arguments: [String]) async throws {
        let result = try await EndToEndTests.alarmctl(arguments, errorOutput: try Self.pipeWithoutReader())
        #expect(result.status == ExitStatus.usage.rawValue)
    }

    @Test("Standard output that cannot be written (a full disk) is an error, not silently lost output")
    func outputNotWritable() async throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let result = try await EndToEndTests.alarmctl(["preview", "07:00 daily", "--count", "3"], output: full)
        #expect(result.status == ExitStatus.outputFailed.rawValue)
        #expect(result.errorOutput.contains("cannot write standard output (No space left on device)"))
    }
}
