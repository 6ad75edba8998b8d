import Testing
import LinuxSystem

@Suite("ClockSynchronization")
struct ClockSynchronizationTests {
    @Test func statusIsReadWithoutError() {
        #expect(throws: Never.self) { try ClockSynchronization.isSynchronized() }
    }
}
