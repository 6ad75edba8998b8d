import AlarmKit
import Foundation
import MosquittoTestSupport
import Synchronization

/// The executables this package builds, found next to the test bundle (e.g. `.build/debug/alarmd`).
enum BuiltExecutable {
    static func url(_ name: String) throws -> URL {
        var directory = Bundle.main.bundleURL
        while directory.path != "/" {
            let candidate = directory.appending(path: name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        throw TestSupportError("no \(name) next to \(Bundle.main.bundleURL.path): build it first (swift build)")
    }
}

/// A process started by a test, its output in files of its own folder; `stop` ends it and removes the folder.
final class ChildProcess: Sendable {
    let name: String
    let folder: URL
    private let process: Process
    private let exited = Broadcast<Bool>(false)

    private init(name: String, folder: URL, process: Process) {
        self.name = name
        self.folder = folder
        self.process = process
    }

    /// Starts `executable` with an empty signal mask (so SIGTERM and SIGINT reach it). Its standard
    /// output and error go to files of its folder, or to `output` and `errorOutput` when given.
    static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:],
        output: FileHandle? = nil, errorOutput: FileHandle? = nil
    ) async throws -> ChildProcess {
        let folder = FileManager.default.temporaryDirectory.appending(path: "alarmctl-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            var childEnvironment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ALARMD_") }
            childEnvironment["COLUMNS"] = "120"
            process.environment = childEnvironment.merging(environment) { _, new in new }
            for (file, assign) in [("stdout", { process.standardOutput = $0 }), ("stderr", { process.standardError = $0 })] as [(String, (FileHandle) -> Void)] {
                let url = folder.appending(path: file)
                _ = FileManager.default.createFile(atPath: url.path, contents: nil)
                assign(try FileHandle(forWritingTo: url))
            }
            if let output { process.standardOutput = output }
            if let errorOutput { process.standardError = errorOutput }
            process.standardInput = FileHandle.nullDevice
            let child = ChildProcess(name: ([executable.lastPathComponent] + arguments).joined(separator: " "), folder: folder, process: process)
            process.terminationHandler = { [exited = child.exited] _ in exited.send(true) }
            try await TestBroker.runWithDefaultSignalMask(process)
            return child
        } catch {
            // Nothing was started: the output folder goes too, whichever step failed.
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    var standardOutput: String { (try? String(contentsOf: folder.appending(path: "stdout"), encoding: .utf8)) ?? "" }
    var standardError: String { (try? String(contentsOf: folder.appending(path: "stderr"), encoding: .utf8)) ?? "" }
    var processIdentifier: Int32 { process.processIdentifier }

    /// Waits for the exit and returns the status; a process still running at the deadline is killed and the wait fails.
    func waitForExit(within timeout: Duration = .seconds(30)) async throws -> Int32 {
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask { for await done in self.exited.stream() where done { return true }; return false }
            group.addTask { try? await Task.sleep(for: timeout); return false }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        guard finished else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("\(name) did not exit within \(timeout); its error output:\n\(standardError)")
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits until the standard output satisfies `condition`, checking it as it grows, within `timeout`.
    func waitForOutput(_ description: String, within timeout: Duration = .seconds(10), until condition: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(standardOutput) {
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw TestSupportError("\(name): no \(description) within \(timeout); output so far:\n\(standardOutput)\n\(standardError)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends `signal` (SIGTERM by default), waits for the exit (SIGKILL after 10 s), and removes the output folder.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let status = (try? await waitForExit(within: .seconds(10))) ?? -1
        try? FileManager.default.removeItem(at: folder)
        return status
    }
}

/// The outcome of one `alarmctl` run.
struct CommandResult {
    let status: Int32
    let output: String
    let errorOutput: String

    /// The standard output read as JSON of type `T`.
    func json<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(output.utf8))
        } catch {
            throw TestSupportError("alarmctl's output is not \(T.self) JSON (\(error)):\n\(output)\n\(errorOutput)")
        }
    }
}
