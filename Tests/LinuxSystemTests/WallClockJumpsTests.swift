import Foundation
import Glibc
import Testing
@testable import LinuxSystem

@Suite("WallClockJumps", .serialized)
struct WallClockJumpsTests {
    /// Steps the real CLOCK_REALTIME of this machine by +2 s, then back exactly, so it runs
    /// only as root. The clock is put back from a CLOCK_BOOTTIME anchor (wall time at the
    /// start plus the time elapsed since), which is exact to microseconds, and is put back
    /// again when the test ends, whatever happened.
    ///
    /// Stepping the clock would disturb tests running beside it, so it runs only when
    /// `ALARMD_CLOCK_STEP_TESTS=1`: `scripts/test` runs it on its own after the main run.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ALARMD_CLOCK_STEP_TESTS"] == "1",
                   "steps the machine's clock: run alone by scripts/test with ALARMD_CLOCK_STEP_TESTS=1"),
          .enabled(if: geteuid() == 0, "stepping CLOCK_REALTIME needs root"))
    func steppingTheRealtimeClockTwoSecondsForwardThenBackIsReportedAsTwoJumps() async throws {
        let anchor = try WallClockAnchor()
        defer { anchor.restore() }

        let consumer = Task { () throws -> [WallClockJump] in
            var jumps = WallClockJumps(logger: quietLogger).makeAsyncIterator()
            guard anchor.set(offsetBy: .seconds(2)) else {
                try Test.cancel("clock_settime(CLOCK_REALTIME) is not permitted here")
            }
            var seen: [WallClockJump] = []
            if let forward = try await jumps.next() { seen.append(forward) }
            guard anchor.restore() else { return seen }
            if let back = try await jumps.next() { seen.append(back) }
            return seen
        }
        let jumps = try await value(of: consumer, within: hangGuard, waitingFor: "two wall-clock jumps")

        try #require(jumps.count == 2)
        #expect(abs(jumps[0].stepSeconds - 2) < 0.05)
        #expect(abs(jumps[1].stepSeconds + 2) < 0.05)
    }

    @Test func cancellingTheConsumerEndsTheSequenceAndItsThread() async throws {
        let consumer = Task { () throws -> WallClockJump? in
            try await WallClockJumps(logger: quietLogger).first { _ in true }
        }
        #expect(await eventually(within: hangGuard) { threadNames().contains("alarmd-clockjmp") })
        consumer.cancel()
        let jump = try await value(of: consumer, within: hangGuard, waitingFor: "the cancelled consumer to return")
        #expect(jump == nil)
        #expect(await eventually(within: hangGuard) { !threadNames().contains("alarmd-clockjmp") })
    }

    @Test func aCancelOnSetTimerIsArmedWhenTheIteratorIsMade() throws {
        // Without stepping the clock: the kernel accepts the cancel-on-set arming and shows it.
        let timer = try WallClockJumpTimer(logger: quietLogger)
        let fdinfo = try String(contentsOfFile: "/proc/self/fdinfo/\(timer.descriptor.raw)", encoding: .utf8)
        #expect(fdinfo.contains("clockid: 0"))
        #expect(fdinfo.contains("settime flags: 03"))
    }
}

/// CLOCK_REALTIME and CLOCK_BOOTTIME read together, so the wall clock can be set relative to
/// where it would be had nobody touched it.
private struct WallClockAnchor: Sendable {
    private let wallNanoseconds: Int64
    private let bootNanoseconds: Int64

    init() throws {
        wallNanoseconds = try Self.now(CLOCK_REALTIME)
        bootNanoseconds = try Self.now(CLOCK_BOOTTIME)
    }

    /// Sets CLOCK_REALTIME to its undisturbed value plus `offset`; false if not permitted.
    @discardableResult
    func set(offsetBy offset: Duration) -> Bool {
        guard let boot = try? Self.now(CLOCK_BOOTTIME) else { return false }
        let target = wallNanoseconds + (boot - bootNanoseconds)
            + offset.components.seconds * 1_000_000_000 + offset.components.attoseconds / 1_000_000_000
        var value = timespec(tv_sec: Int(target / 1_000_000_000), tv_nsec: Int(target % 1_000_000_000))
        return clock_settime(CLOCK_REALTIME, &value) == 0
    }

    /// Puts CLOCK_REALTIME back where it would be had the test not stepped it.
    @discardableResult
    func restore() -> Bool { set(offsetBy: .zero) }

    private static func now(_ clock: clockid_t) throws -> Int64 {
        var value = timespec()
        guard clock_gettime(clock, &value) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return Int64(value.tv_sec) * 1_000_000_000 + Int64(value.tv_nsec)
    }
}
