import LinuxSystem
import Testing

@Suite("Duration in nanoseconds")
struct DurationNanosecondsTests {
    @Test("Whole nanoseconds, truncated toward zero, saturating far out")
    func conversions() {
        #expect(Duration.seconds(2).inNanoseconds == 2_000_000_000)
        #expect(Duration.milliseconds(-1500).inNanoseconds == -1_500_000_000)
        #expect((Duration.nanoseconds(7) + .seconds(1)).inNanoseconds == 1_000_000_007)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 999_999_999).inNanoseconds == 0)
        #expect(Duration.seconds(Int64.max / 2).inNanoseconds == .max)
        #expect(Duration.seconds(Int64.min / 2).inNanoseconds == .min)
    }
}
