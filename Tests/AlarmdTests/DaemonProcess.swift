import AlarmKit
import AlarmNode
import Foundation
import Logging
import Mosquitto
import MosquittoTestSupport
import Synchronization

/// The real alarmd executable, run as a process for a test: its own state folder, its output
/// in a file, and always stopped and cleaned up.
final class DaemonProcess: Sendable {
    let node: String
    let stateDirectory: URL
    private let process: Process
    private let logFile: URL
    private let ownsStateDirectory: Bool

    /// The alarmd executable built beside the test bundle.
    static var executable: URL {
        var directory = Bundle.main.bundleURL
        while !FileManager.default.fileExists(atPath: directory.appending(path: "alarmd").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appending(path: "alarmd")
    }

    private init(node: String, stateDirectory: URL, ownsStateDirectory: Bool, process: Process, logFile: URL) {
        self.node = node
        self.stateDirectory = stateDirectory
        self.ownsStateDirectory = ownsStateDirectory
        self.process = process
        self.logFile = logFile
    }

    /// Starts alarmd against `broker` with simulated hardware (without `--simulate-hardware` when
    /// `simulatedHardware` is false: the configuration's `hardware.mode` then decides).
    static func start(
        broker: TestBroker, node: String = "node-\(UUID().uuidString.prefix(8))", stateDirectory: URL? = nil,
        timeZone: String? = "Europe/Berlin", arguments: [String] = [], environment: [String: String] = [:],
        simulatedHardware: Bool = true
    ) async throws -> DaemonProcess {
        try await start(brokerAddress: "\(broker.host):\(broker.port)", node: node, stateDirectory: stateDirectory,
                        timeZone: timeZone, arguments: arguments, environment: environment, simulatedHardware: simulatedHardware)
    }

    /// Starts alarmd against the broker at `brokerAddress` (`host:port`) with simulated hardware;
    /// `environment` adds to the test's own.
    static func start(
        brokerAddress: String, node: String = "node-\(UUID().uuidString.prefix(8))", stateDirectory: URL? = nil,
        timeZone: String? = "Europe/Berlin", arguments: [String] = [], environment: [String: String] = [:],
        simulatedHardware: Bool = true
    ) async throws -> DaemonProcess {
        let directory = stateDirectory ?? FileManager.default.temporaryDirectory.appending(path: "alarmd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logFile = directory.appending(path: "alarmd-\(UUID().uuidString.prefix(6)).log")
        do {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let process = Process()
            process.executableURL = executable
            process.arguments = ["--broker", brokerAddress, "--node", node,
                                 "--state-dir", directory.path] + (simulatedHardware ? ["--simulate-hardware"] : [])
                + (timeZone.map { ["--time-zone", $0] } ?? []) + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = try FileHandle(forWritingTo: logFile)
            process.standardOutput = output
            process.standardError = output
            let daemon = DaemonProcess(node: node, stateDirectory: directory, ownsStateDirectory: stateDirectory == nil,
                                       process: process, logFile: logFile)
            try await TestBroker.runWithDefaultSignalMask(process)
            return daemon
        } catch {
            // Nothing was started: leave nothing behind (only the log in a folder the test brought).
            try? FileManager.default.removeItem(at: stateDirectory == nil ? directory : logFile)
            throw error
        }
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Waits until the daemon's log contains `text`, checking every 20 ms, for at most `timeout`.
    func waitForLog(_ text: String, within timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !log.contains(text) {
            guard ContinuousClock.now < deadline else { throw TestSupportError("no '\(text)' in the alarmd log within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
    var isRunning: Bool { process.isRunning }

    /// The process's resident set (`VmRSS` of `/proc/<pid>/status`) in KiB, or nil once it has exited.
    var residentKilobytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// Sends a signal without waiting (e.g. SIGHUP).
    func signal(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
    }

    /// Sends SIGTERM and waits (at most 10 s) for the exit; returns the exit status.
    @discardableResult
    func terminate() async -> Int32 {
        await stop(signal: SIGTERM)
    }

    /// Kills with SIGKILL: no goodbye, as in a crash or a power cut.
    func kill() async {
        _ = await stop(signal: SIGKILL)
    }

    private func stop(signal: Int32) async -> Int32 {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, signal)
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(10))
            }
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    /// Stops the process if needed and removes its state folder (unless the test brought its own).
    func cleanUp() async {
        await kill()
        if ownsStateDirectory { try? FileManager.default.removeItem(at: stateDirectory) }
    }
}

/// Runs `body` with a daemon on `broker`, and stops it whatever happens.
@discardableResult
func withDaemonProcess<Result>(
    broker: TestBroker, node: String, stateDirectory: URL? = nil, timeZone: String? = "Europe/Berlin",
    arguments: [String] = [], environment: [String: String] = [:], _ body: (DaemonProcess) async throws -> Result
) async throws -> Result {
    let daemon = try await DaemonProcess.start(broker: broker, node: node, stateDirectory: stateDirectory,
                                               timeZone: timeZone, arguments: arguments, environment: environment)
    do {
        let result = try await body(daemon)
        await daemon.cleanUp()
        return result
    } catch {
        print("alarmd log:\n\(daemon.log)")
        await daemon.cleanUp()
        throw error
    }
}

/// Runs `body` with a started broker and a daemon, and cleans both up whatever happens;
/// `clientKeepAlive` is the test client's (see ``NodeClient/connect(broker:node:clients:protocolSetting:keepAlive:)``).
func withDaemon<Result>(
    arguments: [String] = [], environment: [String: String] = [:], clientKeepAlive: Int = 5,
    _ body: (TestBroker, DaemonProcess, NodeClient) async throws -> Result
) async throws -> Result {
    try await TestBroker.withBroker { broker in
        try await withDaemonProcess(broker: broker, node: "node-\(UUID().uuidString.prefix(8))", arguments: arguments,
                                    environment: environment) { daemon in
            try await withTestClients { clients in
                let client = try await NodeClient.connect(broker: broker, node: daemon.node, clients: clients, keepAlive: clientKeepAlive)
                // Commands sent before the node subscribed would be lost: wait until it is online.
                try await client.waitForMessage("the node online") { message in
                    message.topic == client.topics.status && NodeClient.object(message.payload)?["state"] == .string("online")
                }
                return try await body(broker, daemon, client)
            }
        }
    }
}

/// Writes `state` into `directory` as alarmd keeps it, before a test starts a daemon there.
func writeState(_ state: NodeState, to directory: URL) throws {
    // The store's lock is released when it goes, before the daemon starts.
    let store = StateStore(directory: directory.path, logger: Logger(label: "test"))
    _ = try store.load()
    try store.save(state)
}

/// Runs `body` with a started broker, the test's clients and a temporary folder named after
/// `name` (removed afterwards), for a test that starts alarmd on a state of its own.
func withBrokerAndFolder<Result>(_ name: String, _ body: (TestBroker, TestClients, URL) async throws -> Result) async throws -> Result {
    try await TestBroker.withBroker { broker in
        try await withTestClients { clients in
            let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-\(name)-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            return try await body(broker, clients, directory)
        }
    }
}

/// ``withBrokerAndFolder(_:_:)`` with `alarmd.toml` in the folder holding `configuration`, and a
/// client of the node `<name>-<6 hex digits>`, as which the body starts alarmd.
func withConfiguredNode<Result>(
    _ name: String, configuration: String,
    _ body: (TestBroker, NodeClient, _ nodeName: String, _ config: URL, _ directory: URL) async throws -> Result
) async throws -> Result {
    try await withBrokerAndFolder(name) { broker, clients, directory in
        let config = directory.appending(path: "alarmd.toml")
        try Data(configuration.utf8).write(to: config)
        let nodeName = "\(name)-\(UUID().uuidString.prefix(6))"
        return try await body(broker, try await NodeClient.connect(broker: broker, node: nodeName, clients: clients), nodeName, config, directory)
    }
}
