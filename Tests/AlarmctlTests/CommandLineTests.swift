import AlarmctlCore
import Foundation
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
