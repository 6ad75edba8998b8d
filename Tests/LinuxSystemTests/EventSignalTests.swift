import Glibc
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
}
