import AlarmKit
import Foundation
import Synchronization

/// The alarmd under test: the release binary, simulated hardware, UTC, its own state folder.
struct Daemon {
    let process: ChildProcess
    let node: String
    let stateDirectory: String
    var base: String { "alarmd/\(node)" }
    var pid: Int32 { process.pid }

    func command(_ operation: String) -> String { "\(base)/cmd/\(operation)" }

    /// Starts alarmd and waits for its retained status to say online; returns it and the time
    /// from the spawn to that status as the bench received it.
    static func start(executable: String, node: String, stateDirectory: String, brokerPort: Int,
                      folder: String, observer: Observer) async throws -> (Daemon, startup: Int64) {
        let configuration = folder + "/alarmd.toml"
        // A short alert timeout: an alert the bench fails to stop cannot hide the next ones for long.
        try "[limits]\nalert-timeout = 5\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let online = observer.expect { arrival in
            arrival.message.topic == "alarmd/\(node)/status" && jsonObject(arrival.message.payload)?["state"] as? String == "online"
        }
        let process = try await ChildProcess.spawn(
            "alarmd", executable: executable,
            arguments: ["--config", configuration, "--broker", "127.0.0.1:\(brokerPort)", "--node", node,
                        "--state-dir", stateDirectory, "--simulate-hardware", "--time-zone", "UTC", "--max-alarms", "20000"],
            logPath: "\(folder)/alarmd-\(node).log")
        do {
            let arrival = try await online.value(timeout: 60)
            return (Daemon(process: process, node: node, stateDirectory: stateDirectory), arrival.monotonic - process.spawnedAt)
        } catch {
            throw BenchError("alarmd did not come online (\(process.isRunning ? "running" : "exited")):\n\(process.logTail())")
        }
    }

    /// Waits until alarmd has logged that start-up is over and it gives its memory back
    /// (about 10 s after it republished its alarms), then 2 s more, so that what follows
    /// measures the node as it runs from then on. Returns false after `timeout` seconds
    /// without that line.
    func startupMemoryReleased(timeout: Double = 60) async throws -> Bool {
        let deadline = Nanos.monotonic() + Int64(timeout * 1e9)
        while Nanos.monotonic() < deadline {
            let log = (try? String(contentsOfFile: process.logPath, encoding: .utf8)) ?? ""
            if log.contains("releasing start-up memory") {
                try await Task.sleep(for: .seconds(2))
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// SIGTERM and wait: alarmd publishes offline and switches the hardware off first.
    func stop() async {
        await process.stop()
    }

    /// The size of its state file, in bytes.
    var stateFileSize: Int {
        ((try? FileManager.default.attributesOfItem(atPath: stateDirectory + "/state.json"))?[.size] as? Int) ?? 0
    }
}

/// The bench's listening connection: every node's status, events and simulated outputs, handed
/// to whoever registered for them.
final class Observer: Sendable {
    let client: BenchClient
    private final class Handlers: Sendable {
        let registered = Mutex<(next: Int, all: [Int: @Sendable (BenchClient.Arrival) -> Void])>((0, [:]))
    }
    private let handlers = Handlers()

    init(port: Int) async throws {
        let handlers = self.handlers
        client = try BenchClient(name: "observer", port: port) { arrival in
            for handler in handlers.registered.withLock({ Array($0.all.values) }) { handler(arrival) }
        }
        try await client.start(subscriptions: ["alarmd/+/status", "alarmd/+/events", "alarmd/+/sim/outputs", "alarmd/+/sim/buttons"])
    }

    /// Calls `handler` for every arrival until the returned id is removed.
    @discardableResult
    func add(_ handler: @escaping @Sendable (BenchClient.Arrival) -> Void) -> Int {
        handlers.registered.withLock { registered in
            registered.next += 1
            registered.all[registered.next] = handler
            return registered.next
        }
    }

    func remove(_ id: Int) {
        _ = handlers.registered.withLock { $0.all.removeValue(forKey: id) }
    }

    /// Starts watching now for the first arrival that `matches`; await it with `value(timeout:)`.
    func expect(_ matches: @escaping @Sendable (BenchClient.Arrival) -> Bool) -> Expectation {
        let expectation = Expectation()
        expectation.handlerID = add { arrival in
            if matches(arrival) { expectation.fulfil(arrival) }
        }
        expectation.observer = self
        return expectation
    }
}

/// One awaited arrival (see ``Observer/expect(_:)``).
final class Expectation: @unchecked Sendable {
    // handlerID and observer are set once, right after creation, before anyone awaits.
    fileprivate var handlerID = 0
    fileprivate weak var observer: Observer?
    private let state = Mutex<(arrival: BenchClient.Arrival?, waiter: CheckedContinuation<BenchClient.Arrival, any Error>?)>((nil, nil))

    fileprivate func fulfil(_ arrival: BenchClient.Arrival) {
        let waiter = state.withLock { state -> CheckedContinuation<BenchClient.Arrival, any Error>? in
            guard state.arrival == nil else { return nil }
            state.arrival = arrival
            return state.waiter.take()
        }
        waiter?.resume(returning: arrival)
    }

    func value(timeout seconds: Double) async throws -> BenchClient.Arrival {
        defer { observer?.remove(handlerID) }
        let timer = Task { [weak self] in
            try await Task.sleep(for: .seconds(seconds))
            self?.state.withLock { $0.waiter.take() }?.resume(throwing: BenchError("nothing arrived within \(seconds) s"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let arrived = state.withLock { state -> BenchClient.Arrival? in
                if state.arrival == nil { state.waiter = continuation }
                return state.arrival
            }
            if let arrived { continuation.resume(returning: arrived) }
        }
    }
}
