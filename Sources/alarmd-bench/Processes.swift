import Foundation
import Glibc
import Synchronization

/// A failure of the bench itself (a process that would not start, a reply that never came).
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What must be undone whatever happens: child processes to stop and folders to remove. Runs at
/// the normal end, after an error, and on SIGINT/SIGTERM/SIGHUP (see ``installSignalHandlers()``).
final class Cleanup: Sendable {
    static let shared = Cleanup()

    private struct State {
        var children: [ChildProcess] = []
        var folders: [String] = []
        var done = false
    }

    private let state = Mutex(State())

    func register(_ child: ChildProcess) { state.withLock { $0.children.append(child) } }
    func register(folder: String) { state.withLock { $0.folders.append(folder) } }

    /// Stops every child still running (SIGTERM, then SIGKILL after a grace period; daemons before
    /// the broker, so that they can say goodbye) and removes the folders. Runs once.
    func run() {
        let (children, folders) = state.withLock { state -> ([ChildProcess], [String]) in
            guard !state.done else { return ([], []) }
            state.done = true
            return (state.children, state.folders)
        }
        for child in children.reversed() {
            child.terminate(grace: 5)
        }
        for folder in folders {
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// A handler writes the signal number to a pipe (the only safe thing to do in a handler); a
    /// thread reads it, cleans up, and exits 128 + the signal. Handlers, unlike SIG_IGN, are reset
    /// to the default in children, so the daemon and the broker keep their own signal handling.
    static func installSignalHandlers() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        signalPipe = fds[1]
        let reader = fds[0]
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(signalPipe, &byte, 1)
            }
        }
        let thread = Thread {
            var byte: UInt8 = 0
            while read(reader, &byte, 1) != 1 {}
            FileHandle.standardError.write(Data("\nalarmd-bench: signal \(byte): stopping the daemon and the broker, removing temporary folders\n".utf8))
            Cleanup.shared.run()
            exit(128 + Int32(byte))
        }
        thread.name = "bench-signals"
        thread.start()
    }
}

/// Written once before the handlers are installed; read by them.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// A child process (mosquitto, alarmd, mosquitto_sub) with its output in a log file.
final class ChildProcess: Sendable {
    let name: String
    let process: Process
    let logPath: String
    /// Monotonic ns just before the spawn.
    let spawnedAt: Int64

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    private init(name: String, process: Process, logPath: String, spawnedAt: Int64) {
        self.name = name
        self.process = process
        self.logPath = logPath
        self.spawnedAt = spawnedAt
    }

    /// Spawns from a fresh thread whose signal mask is empty: `posix_spawn` hands the calling
    /// thread's mask to the child, and a child with SIGTERM blocked could never be stopped.
    ///
    /// - Parameter environment: set on top of the bench's own environment.
    static func spawn(_ name: String, executable: String, arguments: [String], environment: [String: String] = [:],
                      logPath: String) async throws -> ChildProcess {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, set in set }
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        let spawnedAt: Int64 = try await withCheckedThrowingContinuation { continuation in
            let spawner = Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                let start = Nanos.monotonic()
                do {
                    try process.run()
                    continuation.resume(returning: start)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            spawner.name = "bench-spawn"
            spawner.start()
        }
        try? log.close()
        let child = ChildProcess(name: name, process: process, logPath: logPath, spawnedAt: spawnedAt)
        Cleanup.shared.register(child)
        return child
    }

    /// SIGTERM, then SIGKILL if it is still running after `grace` seconds. Blocks; returns once
    /// it has exited (or 2 s after SIGKILL).
    func terminate(grace: Double) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        kill(pid, SIGCONT)
        if waitForExit(seconds: grace) { return }
        kill(pid, SIGKILL)
        _ = waitForExit(seconds: 2)
    }

    /// ``terminate(grace:)`` off the cooperative pool.
    func stop(grace: Double = 10) async {
        await withCheckedContinuation { continuation in
            Thread { [self] in
                terminate(grace: grace)
                continuation.resume()
            }.start()
        }
    }

    private func waitForExit(seconds: Double) -> Bool {
        let deadline = Nanos.monotonic() + Int64(seconds * 1e9)
        while isRunning, Nanos.monotonic() < deadline { usleep(5_000) }
        return !isRunning
    }

    /// The last lines of its log, for error messages.
    func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}

/// A real mosquitto on 127.0.0.1 on a free port: anonymous, `set_tcp_nodelay true`, no
/// persistence, no pid file, logging to a file in the bench's folder.
struct Broker {
    let port: Int
    let process: ChildProcess

    static func start(in folder: String) async throws -> Broker {
        let port = try freePort()
        let configuration = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            set_tcp_nodelay true
            persistence false
            log_dest stderr
            log_type error
            log_type warning

            """
        let configurationPath = folder + "/mosquitto.conf"
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        let executable = ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let executable else { throw BenchError("mosquitto is not installed: apt-get install mosquitto") }
        let process = try await ChildProcess.spawn("mosquitto", executable: executable, arguments: ["-c", configurationPath],
                                                   logPath: folder + "/mosquitto.log")
        let deadline = Nanos.monotonic() + 5_000_000_000
        while Nanos.monotonic() < deadline {
            guard process.isRunning else { throw BenchError("mosquitto exited at start:\n\(process.logTail())") }
            if acceptsConnections(port: port) { return Broker(port: port, process: process) }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw BenchError("mosquitto did not accept connections on port \(port) within 5 s:\n\(process.logTail())")
    }

    /// A port on 127.0.0.1 that was free a moment ago.
    static func freePort() throws -> Int {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw BenchError("socket(): \(String(cString: strerror(errno)))") }
        defer { close(socketFD) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socketFD, pointer, length) == 0 && getsockname(socketFD, pointer, &length) == 0
            }
        }
        guard bound else { throw BenchError("bind() on 127.0.0.1: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func acceptsConnections(port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
