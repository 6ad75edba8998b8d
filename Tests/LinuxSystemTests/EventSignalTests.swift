import Dispatch
import Glibc
import Synchronization
import LinuxSystem
import Testing

@Suite("EventSignal (eventfd wake-ups)")
struct EventSignalTests {
    /// Whether poll(2) reports the signal's descriptor readable right now (no waiting).
    func isReadable(_ signal: EventSignal) -> Bool {
        var descriptor = pollfd(fd: signal.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLIN) != 0
    }

    @Test func signalsMakeTheDescriptorReadableUntilCleared() throws {
        let signal = try EventSignal(waking: "the test")
        #expect(!isReadable(signal))
        signal.signal()
        signal.signal()
        signal.signal()
        #expect(isReadable(signal))
        signal.clear()
        #expect(!isReadable(signal))
    }

    @Test func aSignalAfterAClearWakesAgain() throws {
        let signal = try EventSignal(waking: "the test")
        signal.signal()
        signal.clear()
        signal.signal()
        #expect(isReadable(signal), "a signal after clear() must not be swallowed as already pending")
        signal.clear()
        signal.clear()
        #expect(!isReadable(signal))
    }

    @Test func signalsFromManyThreadsLeaveItReadable() async throws {
        let signal = try EventSignal(waking: "the test")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<1000 { signal.signal() } } }
        }
        #expect(isReadable(signal))
        signal.clear()
        #expect(!isReadable(signal))
    }

    @Test("a producer and a consumer at full speed: no wake-up is lost")
    func noLostWakeUps() async throws {
        let signal = try EventSignal(waking: "the test")
        let produced = Atomic<Int>(0)
        let total = 20_000
        // The consumer blocks in poll(2), so it runs on a thread of its own, not on Swift's pool.
        let consumer = Task.detached {
            await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
                DispatchQueue(label: "event-signal-consumer").async {
                    var seen = 0
                    while seen < total {
                        var descriptor = pollfd(fd: signal.descriptor, events: Int16(POLLIN), revents: 0)
                        // Work is waiting whenever `seen` < the count; a lost wake-up times out here.
                        guard poll(&descriptor, 1, 2000) == 1 else { break }
                        signal.clear()
                        seen = produced.load(ordering: .sequentiallyConsistent)
                    }
                    done.resume(returning: seen)
                }
            }
        }
        for _ in 0..<total {
            produced.add(1, ordering: .sequentiallyConsistent)
            signal.signal()
        }
        #expect(await consumer.value == total, "the consumer waited 2 s for a signal that was never written")
    }
}
