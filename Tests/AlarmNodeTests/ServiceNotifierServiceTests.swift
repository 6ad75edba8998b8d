@testable import AlarmNode
import Foundation
import LinuxSystem
import Logging
import MosquittoTestSupport
import Testing

/// The time limit turns the hang of a service that never asks the node into a failure.
@Suite("systemd's watchdog", .timeLimit(.minutes(1)))
struct ServiceNotifierServiceTests {
    /// Opened once by the test; every wait before that, and after it, is let through then.
    actor Gate {
        private var isOpen = false
        private var waiting: [CheckedContinuation<Void, Never>] = []
        func wait() async {
            if !isOpen { await withCheckedContinuation { waiting.append($0) } }
        }
        func open() {
            isOpen = true
            for continuation in waiting { continuation.resume() }
            waiting = []
        }
    }

    @Test("The watchdog is fed only once the node has answered: a node stuck on its actor is not")
    func feedsTheWatchdogOnlyAfterTheNodeAnswers() async throws {
        let name = "@alarmd-node-test-\(UUID().uuidString)"
        let systemd = try DatagramListener(address: name)
        let gate = Gate()
        let (asked, ask) = AsyncStream<Void>.makeStream()
        let service = ServiceNotifierService(
            notifier: ServiceNotifier(environment: ["NOTIFY_SOCKET": name, "WATCHDOG_USEC": "30000000"]),
            nodeAnswers: { ask.yield(); await gate.wait() }, logger: Logger(label: "test"))
        let running = Task { try await service.run() }
        #expect(try systemd.receive(within: .seconds(10)) == "READY=1")
        for await _ in asked { break }
        // The service waits for the node, and cannot have fed the watchdog.
        #expect(throws: (any Error).self) { try systemd.receive(within: .zero) }
        await gate.open()
        #expect(try systemd.receive(within: .seconds(10)) == "WATCHDOG=1")
        running.cancel()
        try await running.value
        #expect(try systemd.receive(within: .seconds(10)) == "STOPPING=1")
    }
}
