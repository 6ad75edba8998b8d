import Testing
import LinuxSystem

@Suite("ClockSynchronization")
struct ClockSynchronizationTests {
    @Test func statusIsReadWithoutError() throws {
        let status = try ClockSynchronization.status()
        #expect(status.estimatedError >= .zero)
        #expect(status.maximumError >= .zero)
    }
}
