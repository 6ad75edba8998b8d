import Foundation
import Logging
import Mosquitto
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A failure of the test infrastructure (broker, proxy, waiting for an event).
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A real `mosquitto` broker on 127.0.0.1 for one test, with a temporary configuration:
/// anonymous access, `set_tcp_nodelay true`, logs to stderr (kept in a file), no pid file, no persistence;
/// optionally TLS only, with a throwaway certificate authority made by `openssl`.
///
/// Prefer ``withBroker(started:_:)``, which stops the broker and removes its folder whatever the test does.
public final class TestBroker: Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    private let directory: URL
    private let executable: URL
    private let running: Mutex<RunningBroker?> = Mutex(nil)
    /// The PEM file of the authority that signed the broker's certificate, when the broker speaks TLS.
    public let tlsCAFile: String?

    /// The process of one broker run; its termination handler resumes whoever waits for the exit.
    private final class RunningBroker: Sendable {
        let process: Process
        var pid: pid_t { process.processIdentifier }
        private let exit: Mutex<(exited: Bool, waiters: [CheckedContinuation<Void, Never>])> = Mutex((false, []))

        init(process: Process) {
            self.process = process
        }

        func markExited() {
            let waiters = exit.withLock { state in
                state.exited = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters {
                waiter.resume()
            }
        }

        var hasExited: Bool { exit.withLock { $0.exited } }

        func waitForExit() async {
            await withCheckedContinuation { continuation in
                let exited = exit.withLock { state in
                    if !state.exited {
                        state.waiters.append(continuation)
                    }
                    return state.exited
                }
                if exited {
                    continuation.resume()
                }
            }
        }
    }

    /// Prepares a broker on `port` (a free one if nil) without starting it. With `tls`, the listener
    /// speaks only TLS, with a certificate for 127.0.0.1 signed by ``tlsCAFile``. `settings` are
    /// more lines of mosquitto.conf (e.g. `max_packet_size 3000`).
    public init(port: Int? = nil, tls: Bool = false, settings: String = "") async throws {
        self.port = try port ?? Self.freePort()
        self.executable = try Self.findExecutable("mosquitto")
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mosquitto-testbroker-\(UUID().uuidString)", isDirectory: true)
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var tlsSettings = ""
        if tls {
            try await Self.makeCertificates(in: directory)
            tlsSettings = """
                cafile \(directory.path)/ca.crt
                certfile \(directory.path)/server.crt
                keyfile \(directory.path)/server.key

                """
            self.tlsCAFile = "\(directory.path)/ca.crt"
        } else {
            self.tlsCAFile = nil
        }
        let configuration = """
            listener \(self.port) 127.0.0.1
            \(tlsSettings)allow_anonymous true
            set_tcp_nodelay true
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            log_type information
            connection_messages true
            persistence false
            \(settings)

            """
        try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
    }

    deinit {
        if let broker = running.withLock({ $0 }), !broker.hasExited {
            Glibc.kill(broker.pid, SIGKILL)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private var configurationFile: URL { directory.appendingPathComponent("mosquitto.conf") }
    private var logFile: URL { directory.appendingPathComponent("mosquitto.log") }

    /// Prepares a broker (and starts it unless `started` is false), runs `body` with it, then kills
    /// it and removes its folder, also when `body` throws.
    public static func withBroker<Result>(
        started: Bool = true,
        tls: Bool = false,
        settings: String = "",
        _ body: (TestBroker) async throws -> Result
    ) async throws -> Result {
        let broker = try await TestBroker(tls: tls, settings: settings)
        do {
            if started {
                try await broker.start()
            }
            let result = try await body(broker)
            await broker.shutDown()
            return result
        } catch {
            await broker.shutDown()
            throw error
        }
    }

    /// Spawns mosquitto and returns once it accepts TCP connections (within 5 s).
    public func start() async throws {
        if let previous = running.withLock({ $0 }), !previous.hasExited {
            throw TestSupportError("the test broker on port \(port) is already running")
        }
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logFile)
        try log.seekToEnd()
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-c", configurationFile.path]
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        let exitSignal = Mutex<RunningBroker?>(nil)
        process.terminationHandler = { _ in
            exitSignal.withLock { $0 }?.markExited()
        }
        try await Self.runWithDefaultSignalMask(process)
        let broker = RunningBroker(process: process)
        exitSignal.withLock { $0 = broker }
        if !process.isRunning {
            broker.markExited()
        }
        running.withLock { $0 = broker }
        try? log.close()
        try await waitUntilAcceptingConnections(broker)
    }

    /// SIGTERM, then waits for the broker to exit: it closes every client connection (MQTT 5 clients
    /// get a DISCONNECT "server shutting down"). Throws if it is still running after 5 s (it is then killed).
    public func stop() async throws {
        guard let broker = running.withLock({ $0 }), !broker.hasExited else { return }
        Glibc.kill(broker.pid, SIGTERM)
        // A frozen broker handles SIGTERM only once it runs again.
        Glibc.kill(broker.pid, SIGCONT)
        let exited = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await broker.waitForExit()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !exited {
            await kill()
            throw TestSupportError("mosquitto ignored SIGTERM for 5 s and was killed; its log:\n\(logText())")
        }
    }

    /// SIGKILL, then waits for the exit: the broker vanishes without closing anything cleanly.
    public func kill() async {
        guard let broker = running.withLock({ $0 }), !broker.hasExited else { return }
        Glibc.kill(broker.pid, SIGKILL)
        await broker.waitForExit()
    }

    /// SIGSTOP: the broker stays connected but answers nothing, like a silent network partition.
    public func freeze() {
        signal(SIGSTOP)
    }

    /// SIGCONT after ``freeze()``.
    public func thaw() {
        signal(SIGCONT)
    }

    /// ``stop()`` then ``start()`` on the same port. The broker keeps no state (no persistence).
    public func restart() async throws {
        try await stop()
        try await start()
    }

    /// Kills the broker if it runs and removes its folder.
    public func shutDown() async {
        await kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The running broker's process id; nil while it is not running.
    public var processIdentifier: Int32? {
        running.withLock { $0 }.flatMap { $0.hasExited ? nil : $0.pid }
    }

    /// The broker's log so far, for failure messages.
    public func logText() -> String {
        (try? String(contentsOf: logFile, encoding: .utf8)) ?? "(no log)"
    }

    /// A client configuration for this broker, with short reconnect delays so tests run fast.
    public func clientConfiguration(
        clientID: String,
        port: Int? = nil,
        protocolSetting: MQTTProtocolSetting = .auto,
        will: MQTTConfiguration.Will? = nil,
        outgoingBufferLimit: Int = 100,
        keepAlive: Int = 5
    ) -> MQTTConfiguration {
        MQTTConfiguration(
            host: host,
            port: port ?? self.port,
            clientID: clientID,
            tls: tlsCAFile.map { MQTTConfiguration.TLS(caFile: $0) },
            keepAlive: keepAlive,
            protocolSetting: protocolSetting,
            will: will,
            reconnectDelay: .milliseconds(20),
            maximumReconnectDelay: .milliseconds(200),
            maximumDelayAfterShortConnections: .milliseconds(200),
            outgoingBufferLimit: outgoingBufferLimit
        )
    }

    private func signal(_ signal: Int32) {
        if let broker = running.withLock({ $0 }), !broker.hasExited {
            Glibc.kill(broker.pid, signal)
        }
    }

    /// A throwaway CA (ca.crt) and a certificate for 127.0.0.1 signed by it (server.crt, server.key).
    private static func makeCertificates(in directory: URL) async throws {
        let openssl = try findExecutable("openssl")
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await run(openssl, ["req", "-x509"] + curve + ["-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=alarmd test CA"], in: directory)
        try await run(openssl, ["req"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"], in: directory)
        try "subjectAltName=IP:127.0.0.1\n".write(to: directory.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
        try await run(openssl, [
            "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "san.ext",
        ], in: directory)
        // mosquitto, started as root, reads the key after dropping to its own user.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory.appendingPathComponent("server.key").path)
    }

    /// Runs a tool to completion; throws with its output if it fails.
    private static func run(_ executable: URL, _ arguments: [String], in directory: URL) async throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let exited = Mutex<CheckedContinuation<Void, any Error>?>(nil)
        try await withCheckedThrowingContinuation { continuation in
            exited.withLock { $0 = continuation }
            process.terminationHandler = { _ in
                exited.withLock { $0.take() }?.resume()
            }
            do {
                try process.run()
            } catch {
                exited.withLock { $0.take() }?.resume(throwing: error)
            }
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw TestSupportError("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) failed:\n\(text)")
        }
    }

    /// Runs `process` from a fresh thread whose signal mask is empty. `posix_spawn` passes the calling
    /// thread's mask to the child, and Swift concurrency's threads block SIGTERM, SIGINT, SIGHUP...:
    /// a broker spawned from a task would ignore SIGTERM forever.
    public static func runWithDefaultSignalMask(_ process: Process) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let spawner = Thread {
                var noSignals = sigset_t()
                sigemptyset(&noSignals)
                pthread_sigmask(SIG_SETMASK, &noSignals, nil)
                do {
                    try process.run()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            spawner.name = "test-broker-spawn"
            spawner.start()
        }
    }

    private func waitUntilAcceptingConnections(_ broker: RunningBroker) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if broker.hasExited {
                throw TestSupportError("mosquitto exited at start; its log:\n\(logText())")
            }
            if Self.acceptsConnections(port: port) {
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestSupportError("mosquitto did not accept connections on port \(port) within 5 s; its log:\n\(logText())")
    }

    static func acceptsConnections(port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = loopbackAddress(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// The ports ``freePort()`` handed out in this process: none twice, as a server given one may
    /// take seconds to listen on it (a RabbitMQ node does).
    private static let handedOut = Mutex(Set<Int>())

    /// A port on 127.0.0.1 that is free now, never handed out before in this process, and below the
    /// kernel's ephemeral range (`ip_local_port_range`), which a `bind` to port 0 and every outgoing
    /// connection draw from: none of them takes it before its server listens. (Drawn from that range,
    /// a RabbitMQ node's port was once taken by another test's mosquitto while the node started, and
    /// the test spoke to the wrong broker.)
    public static func freePort() throws -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        let ephemeralStart = range?.first ?? 32768
        let candidates = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<1000 {
            let port = Int.random(in: candidates)
            guard handedOut.withLock({ $0.insert(port).inserted }), canBind(port: port) else { continue }
            return port
        }
        throw TestSupportError("no free port on 127.0.0.1 in \(candidates) after 1000 tries: too many servers running?")
    }

    /// Whether a listener could take `port` on 127.0.0.1 now (a bind, then close).
    static func canBind(port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = loopbackAddress(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func findExecutable(_ name: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/bin"]
        for folder in folders {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw TestSupportError("no \(name) executable in PATH or /usr/sbin: apt-get install mosquitto openssl")
    }
}
