@testable import AlarmKit
import Dispatch
import Glibc
import Synchronization
import Testing

@Suite("Broadcast")
struct BroadcastTests {
    @Test("a new stream yields the current value, then later ones in the senders' order")
    func currentThenLater() async {
        let broadcast = Broadcast(1)
        var values = broadcast.stream().makeAsyncIterator()
        #expect(await values.next() == 1)
        broadcast.send(2)
        #expect(await values.next() == 2)
        broadcast.send(3)
        broadcast.send(4)
        // A slow observer skips to the newest value.
        #expect(await values.next() == 4)
    }

    @Test("a broadcast is an AsyncSequence: for await iterates a stream of its own", .timeLimit(.minutes(1)))
    func iteratedDirectly() async {
        let broadcast = Broadcast<NodeStatus?>(nil)
        broadcast.send(NodeStatus(state: "online"))
        broadcast.finish()
        var seen: [String?] = []
        for await status in broadcast { seen.append(status?.state) }
        #expect(seen == ["online"])
    }

    @Test("a stream opened after finish() yields the current value and ends", .timeLimit(.minutes(1)))
    func streamAfterFinish() async {
        let broadcast = Broadcast(1)
        broadcast.finish()
        var values = broadcast.stream().makeAsyncIterator()
        #expect(await values.next() == 1)
        #expect(await values.next() == nil)
        #expect(broadcast.observerCount == 0)
    }

    /// Cancelling an observer's task ends its stream while the runtime holds that task's
    /// status lock, and the stream's termination handler unregisters the observer. A sender
    /// that delivered values while holding the lock the handler takes waited for the task's
    /// status lock in turn: both threads stopped for good (seen as an `alarmctl` that hung
    /// after its answer had arrived, in 2 of 1,000 runs). Many cancellations during a stream
    /// of sends make that interleaving likely (it deadlocked within seconds before the fix).
    /// A deadlock can stop every thread of Swift's pool, and with it the test's time limit,
    /// so a watchdog on a thread of its own ends the test run instead of letting it hang.
    @Test("cancelling observers while values are sent does not deadlock", .timeLimit(.minutes(1)))
    func cancellationDuringSends() async {
        let watchdog = Watchdog(after: 90, message: "BroadcastTests: a send and a cancelled observer deadlocked")
        defer { watchdog.disarm() }
        let broadcast = Broadcast(0)
        // The sender runs on a thread of its own, as the MQTT client's callbacks do: a busy loop
        // on one of Swift's pool threads (two on CI's machine) stalled every other test of the
        // run for as long as this one took.
        let stopSending = Atomic(false)
        let senderDone = DispatchSemaphore(value: 0)
        DispatchQueue(label: "test-broadcast-sender").async {
            var value = 0
            while !stopSending.load(ordering: .relaxed) {
                value += 1
                broadcast.send(value)
            }
            senderDone.signal()
        }
        for _ in 0..<3_000 {
            let observer = Task {
                var seen = 0
                for await _ in broadcast.stream() { seen += 1 }
                return seen
            }
            await Task.yield()
            observer.cancel()
            _ = await observer.value
        }
        stopSending.store(true, ordering: .relaxed)
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                senderDone.wait()
                continuation.resume()
            }
        }
        // Every observer unregistered itself: a send reaches nobody now.
        #expect(broadcast.observerCount == 0)
    }
}

/// Ends the process with a message if not disarmed in time: for tests whose failure is a
/// deadlock, which would otherwise hang the whole run. Its timer runs on a dispatch queue of
/// its own (an overcommitting thread), not on Swift's pool, which the deadlock may have stopped.
@Suite("A remote node's streams after close")
struct RemoteStreamsAfterCloseTests {
    @Test("events() asked for after close() ends at once, so that a follower started late never waits for ever")
    func eventsAfterClose() async {
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: "127.0.0.1", port: 1, node: "closed"))
        await connection.close()
        let watchdog = Watchdog(after: 60, message: "RemoteStreamsAfterCloseTests: events() after close() never ended")
        for await _ in connection.events() {}
        watchdog.disarm()
    }
}

final class Watchdog: Sendable {
    private let disarmed = Atomic(false)
    private let queue = DispatchQueue(label: "test-watchdog")

    init(after seconds: Int, message: String) {
        queue.asyncAfter(deadline: .now() + .seconds(seconds)) { [self] in
            guard !disarmed.load(ordering: .acquiring) else { return }
            let line = "\(message); ending the test run\n"
            _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            abort()
        }
    }

    func disarm() {
        disarmed.store(true, ordering: .releasing)
    }
}
