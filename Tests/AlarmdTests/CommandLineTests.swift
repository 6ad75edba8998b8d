import Foundation
import Testing

/// alarmd's command line, as a user or a unit file writes it.
@Suite("alarmd command line")
struct CommandLineTests {
    @Test("An override outside the range the file allows is a configuration error (exit 2)", arguments: ["0", "100001"])
    func maxAlarmsOutOfRange(value: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = DaemonProcess.executable
        process.arguments = ["--max-alarms", value, "--simulate-hardware", "--state-dir", directory.path, "--broker", "127.0.0.1:1"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // A value taken would start the daemon: stop it rather than wait for it.
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 2)
        #expect(text.contains("--max-alarms must be from 1 to 100000"), "\(text)")
    }

    @Test("reset-authorization refuses a folder that holds no node's state, and creates nothing there; a node.json kept aside is no reason")
    func resetAuthorizationNeedsAState() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        func reset(_ folder: URL) throws -> (status: Int32, text: String) {
            let process = Process()
            process.executableURL = DaemonProcess.executable
            process.arguments = ["reset-authorization", "--state-dir", folder.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        let misspelt = directory.appending(path: "stat")
        let refused = try reset(misspelt)
        #expect(refused.status == 1)
        #expect(refused.text.contains("no node state in \(misspelt.path)"), "\(refused.text)")
        #expect(!FileManager.default.fileExists(atPath: misspelt.path))
        // A node whose node.json was kept aside as damaged, with its alarms still there.
        let state = directory.appending(path: "state")
        try FileManager.default.createDirectory(at: state.appending(path: "alarms"), withIntermediateDirectories: true)
        let done = try reset(state)
        #expect(done.status == 0, "\(done.text)")
        #expect(FileManager.default.fileExists(atPath: state.appending(path: "node.json").path))
    }
}
