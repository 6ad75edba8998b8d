import Foundation
import Glibc
import Logging
import Testing

/// A logger that drops everything, for adapters that require one.
let quietLogger = Logger(label: "alarmd.linux-system.tests") { _ in SwiftLogNoOpLogHandler() }

/// How long a test waits for what should happen at once: a guard against a hang, not a measure
/// of speed. Generous, because these tests share Swift's pool (two threads on CI's 2-core
/// machine) with every other suite of the run: a CI run once saw every test stalled for 18 s.
let hangGuard: Duration = .seconds(30)

struct DeadlineExceeded: Error, CustomStringConvertible {
    let waitingFor: String
    var description: String { "gave up waiting for \(waitingFor)" }
}

/// The task's value, or `DeadlineExceeded` (after cancelling the task) if it takes longer than
/// `limit`. This is how the tests wait for events: no fixed sleeps.
func value<Value: Sendable>(
    of task: Task<Value, any Error>,
    within limit: Duration,
    waitingFor: String
) async throws -> Value {
    let outcome = try await withThrowingTaskGroup(of: DeadlineOutcome<Value>.self) { group in
        group.addTask { .finished(try await task.value) }
        group.addTask {
            try? await Task.sleep(for: limit)
            return .timedOut
        }
        let first = try await group.next() ?? .timedOut
        if case .timedOut = first { task.cancel() }
        group.cancelAll()
        return first
    }
    guard case .finished(let value) = outcome else { throw DeadlineExceeded(waitingFor: waitingFor) }
    return value
}

private enum DeadlineOutcome<Value: Sendable>: Sendable {
    case finished(Value)
    case timedOut
}

/// Re-checks `condition` until it holds or `limit` passes, for states with no event to wait on
/// (a thread having exited).
func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// The names of this process's threads, from /proc/self/task/*/comm.
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A fresh directory under the system's temporary directory, removed with everything in it.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("\(FileManager.default.temporaryDirectory.path)/alarmd-linux-test-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        path = String(cString: created)
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func contents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
