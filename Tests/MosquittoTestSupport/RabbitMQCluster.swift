import Foundation
import Glibc
import Synchronization

/// Private RabbitMQ nodes with the MQTT plugin (Debian's `rabbitmq-server`), for tests: each
/// with its own node name, folders and loopback ports, beside an Erlang port mapper of their own
/// (its own port) and a cookie in their own HOME, so they never meet a system instance. Nodes of
/// one cluster value can be clustered. Everything runs under `directory` and goes with ``shutDown()``.
public final class RabbitMQCluster: Sendable {
    public static let serverScript = "/usr/lib/rabbitmq/bin/rabbitmq-server"
    static let controlScript = "/usr/lib/rabbitmq/bin/rabbitmqctl"
    static let epmd = "/usr/bin/epmd"

    /// Why the tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        for path in [serverScript, controlScript, epmd] where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(path) is missing: apt-get install rabbitmq-server (Debian's, with its MQTT plugin)"
        }
        return nil
    }

    /// One node: `alarmd-test-<n>-<id>@localhost`.
    public final class Node: Sendable {
        public let name: String
        public let mqttPort: Int
        let amqpPort: Int
        let distributionPort: Int
        let directory: URL
        private let cluster: RabbitMQCluster
        private let process = Mutex<Process?>(nil)

        init(cluster: RabbitMQCluster, index: Int) throws {
            self.cluster = cluster
            name = "alarmd-test-\(index)-\(cluster.id)@localhost"
            mqttPort = try TestBroker.freePort()
            amqpPort = try TestBroker.freePort()
            distributionPort = try TestBroker.freePort()
            directory = cluster.directory.appending(path: "node-\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try """
            listeners.tcp.default = 127.0.0.1:\(amqpPort)
            mqtt.listeners.tcp.default = 127.0.0.1:\(mqttPort)
            mqtt.allow_anonymous = true
            loopback_users = none
            log.file.level = info
            """.write(to: directory.appending(path: "rabbitmq.conf"), atomically: true, encoding: .utf8)
            try "[rabbitmq_mqtt].\n".write(to: directory.appending(path: "enabled_plugins"), atomically: true, encoding: .utf8)
        }

        var environment: [String: String] {
            cluster.environment.merging([
                "RABBITMQ_NODENAME": name,
                "RABBITMQ_MNESIA_BASE": directory.appending(path: "mnesia").path,
                "RABBITMQ_LOG_BASE": directory.appending(path: "log").path,
                "RABBITMQ_CONFIG_FILE": directory.appending(path: "rabbitmq.conf").path,
                "RABBITMQ_ENABLED_PLUGINS_FILE": directory.appending(path: "enabled_plugins").path,
                "RABBITMQ_PID_FILE": directory.appending(path: "pid").path,
                "RABBITMQ_DIST_PORT": "\(distributionPort)",
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            ]) { $1 }
        }

        /// Starts the node (again, with its data, after ``stop()``) and returns once its MQTT
        /// listener accepts connections; a slow machine may take a minute or two.
        public func start(within limit: Duration = .seconds(240)) async throws {
            let server = Process()
            server.executableURL = URL(filePath: RabbitMQCluster.serverScript)
            server.environment = environment
            let log = directory.appending(path: "server.out")
            if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
            let output = try FileHandle(forWritingTo: log)
            try output.seekToEnd()
            server.standardOutput = output
            server.standardError = output
            server.standardInput = FileHandle.nullDevice
            try await TestBroker.runWithDefaultSignalMask(server)
            process.withLock { $0 = server }
            let deadline = ContinuousClock.now + limit
            while !TestBroker.acceptsConnections(port: mqttPort) {
                guard server.isRunning, ContinuousClock.now < deadline else {
                    throw TestSupportError("RabbitMQ node \(name) did not open its MQTT port \(mqttPort) within \(limit); its output:\n\(logText())")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// SIGTERM to the Erlang VM, as `rabbitmqctl stop` would, then waits (30 s at most, then SIGKILL).
        public func stop() async {
            guard let server = process.withLock({ $0 }), server.isRunning else { return }
            let pid = (try? String(contentsOf: directory.appending(path: "pid"), encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            Glibc.kill(pid ?? server.processIdentifier, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(30)
            while server.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
            if server.isRunning { kill() }
            server.waitUntilExit()
        }

        /// SIGKILL to the VM and its script.
        func kill() {
            guard let server = process.withLock({ $0 }), server.isRunning else { return }
            if let pid = (try? String(contentsOf: directory.appending(path: "pid"), encoding: .utf8))
                .flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                Glibc.kill(pid, SIGKILL)
            }
            Glibc.kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }

        /// `rabbitmqctl` against this node; throws with its output when it fails.
        @discardableResult
        public func control(_ arguments: String...) async throws -> String {
            let command = Process()
            command.executableURL = URL(filePath: RabbitMQCluster.controlScript)
            command.arguments = ["-n", name] + arguments
            command.environment = environment
            let output = Pipe()
            command.standardOutput = output
            command.standardError = output
            try await TestBroker.runWithDefaultSignalMask(command)
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            command.waitUntilExit()
            guard command.terminationStatus == 0 else {
                throw TestSupportError("rabbitmqctl \(arguments.joined(separator: " ")) on \(name) failed (\(command.terminationStatus)):\n\(text)")
            }
            return text
        }

        /// Makes this node a member of `other`'s cluster (`stop_app`, `join_cluster`, `start_app`).
        public func join(_ other: Node) async throws {
            try await control("stop_app")
            try await control("join_cluster", other.name)
            try await control("start_app")
            let deadline = ContinuousClock.now + .seconds(120)
            while !TestBroker.acceptsConnections(port: mqttPort) {
                guard ContinuousClock.now < deadline else { throw TestSupportError("\(name) did not reopen its MQTT port after joining \(other.name)") }
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// The node's own log and output, for failure messages.
        public func logText() -> String {
            let files = [directory.appending(path: "server.out"), directory.appending(path: "log/\(name).log")]
            return files.map { (try? String(contentsOf: $0, encoding: .utf8)) ?? "" }.joined(separator: "\n").suffix(6000).description
        }
    }

    let id = UUID().uuidString.prefix(6).lowercased()
    let directory: URL
    private let epmdPort: Int
    private let epmdProcess: Process
    private let nodes = Mutex<[Node]>([])

    var environment: [String: String] {
        [
            "HOME": directory.path,  // the Erlang cookie, shared by this cluster's nodes only
            "ERL_EPMD_PORT": "\(epmdPort)",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
        ]
    }

    private init(directory: URL, epmdPort: Int, epmdProcess: Process) {
        self.directory = directory
        self.epmdPort = epmdPort
        self.epmdProcess = epmdProcess
    }

    /// Prepares the cluster's folder and starts its port mapper; nodes come with ``addNode()``.
    public static func make() async throws -> RabbitMQCluster {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-rabbitmq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try TestBroker.freePort()
        let epmd = Process()
        epmd.executableURL = URL(filePath: RabbitMQCluster.epmd)
        epmd.arguments = ["-port", "\(port)", "-address", "127.0.0.1"]
        epmd.standardOutput = FileHandle.nullDevice
        epmd.standardError = FileHandle.nullDevice
        try await TestBroker.runWithDefaultSignalMask(epmd)
        let cluster = RabbitMQCluster(directory: directory, epmdPort: port, epmdProcess: epmd)
        let deadline = ContinuousClock.now + .seconds(10)
        while !TestBroker.acceptsConnections(port: port) {
            guard ContinuousClock.now < deadline else {
                await cluster.shutDown()
                throw TestSupportError("epmd did not listen on port \(port)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return cluster
    }

    /// A new node of this cluster, started.
    public func addNode() async throws -> Node {
        let node = try nodes.withLock { nodes in
            let node = try Node(cluster: self, index: nodes.count)
            nodes.append(node)
            return node
        }
        try await node.start()
        return node
    }

    /// Kills every node and the port mapper, and removes the folder.
    public func shutDown() async {
        for node in nodes.withLock({ $0 }) { node.kill() }
        if epmdProcess.isRunning {
            Glibc.kill(epmdProcess.processIdentifier, SIGKILL)
            epmdProcess.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` with a cluster, shut down afterwards whatever happens.
    public static func with<Result>(_ body: (RabbitMQCluster) async throws -> Result) async throws -> Result {
        let cluster = try await make()
        do {
            let result = try await body(cluster)
            await cluster.shutDown()
            return result
        } catch {
            for node in cluster.nodes.withLock({ $0 }) { print("RabbitMQ node \(node.name):\n\(node.logText())") }
            await cluster.shutDown()
            throw error
        }
    }
}
