import Dispatch
import LinuxSystem
import Logging
import Synchronization

/// Gives back, once start-up is over, the memory that only start-up needed: the pages of code
/// and constant data it ran (reading the configuration and the state file, initialising the
/// Swift runtime, Foundation and ICU, reading back the retained topics), which stay mapped
/// and counted in the resident set otherwise, and the heap its bursts freed.
///
/// Start-up is over `settle` after the first republication to the broker (the node then
/// reads its retained topics back), or `fallback` after the start when no broker answers.
/// It happens once. Later bursts give back only their heap (`QuietMemoryRelease`): the code
/// that commands, alerts and button presses run stays mapped, so that none of them waits for
/// its pages to fault back in, perhaps from the disk when memory is short.
final class StartupMemoryRelease: Sendable {
    /// Runs `work` once `delay` has passed.
    typealias Scheduler = @Sendable (_ delay: Duration, _ work: @escaping @Sendable () -> Void) -> Void

    private let settle: Duration
    private let fallback: Duration
    private let schedule: Scheduler
    private let release: @Sendable () -> Void
    private let released = Atomic(false)

    /// - Parameter release: what to do when start-up is over (tests count the calls).
    init(settle: Duration = .seconds(10), fallback: Duration = .seconds(60),
         schedule: @escaping Scheduler = StartupMemoryRelease.onDispatchQueue,
         release: @escaping @Sendable () -> Void) {
        self.settle = settle
        self.fallback = fallback
        self.schedule = schedule
        self.release = release
    }

    /// The daemon's release: the heap's freed memory and the read-only file pages, logged.
    convenience init(logger: Logger) {
        self.init { Self.releaseStartupMemory(logger: logger) }
    }

    /// The daemon has started its services.
    func started() {
        schedule(fallback) { self.releaseOnce() }
    }

    /// Every alarm was republished to the broker (after each connection).
    func republished() {
        guard !released.load(ordering: .relaxed) else { return }
        schedule(settle) { self.releaseOnce() }
    }

    private func releaseOnce() {
        guard released.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        release()
    }

    private static let queue = DispatchQueue(label: "alarmd.startup-memory-release")

    static func onDispatchQueue(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.inNanoseconds)), execute: work)
    }

    /// Logs first: writing a log line runs code (formatting, the time stamp) that would
    /// otherwise fault straight back in, and an idle node logs nothing more.
    private static func releaseStartupMemory(logger: Logger) {
        logger.info("releasing start-up memory")
        do {
            let unmapped = try ProcessMemory.releaseUnusedMemory()
            logger.debug("start-up memory released", metadata: ["unmappedKiB": "\(unmapped / 1024)"])
        } catch {
            logger.notice("start-up memory not released", metadata: ["error": "\(error)"])
        }
    }
}
