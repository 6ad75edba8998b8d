import AlarmKit
import FoundationEssentials
import LinuxSystem
import Logging
import ServiceLifecycle

/// The node's timer as a service: carries out due transitions until graceful shutdown.
struct NodeTimerService: Service {
    let node: LocalAlarmNode

    func run() async throws {
        await cancelWhenGracefulShutdown { await node.run() }
        // Changes still being written reach the disk before the process ends.
        await node.flush()
    }
}

/// After a failed write (a full disk), writes the state again every 5 s until it is saved: what
/// was answered `internal` reaches the disk as soon as there is space, with no command needed.
/// Nothing runs while writes succeed.
struct StateRetryService: Service {
    let node: LocalAlarmNode

    func run() async throws {
        for await _ in node.writeFailures.cancelOnGracefulShutdown() {
            do {
                try await cancelWhenGracefulShutdown {
                    repeat {
                        try await Task.sleep(for: .seconds(5))
                    } while await !node.saveAfterFailedWrite()
                }
            } catch is CancellationError { return }
        }
    }
}

/// Gives malloc's free pages back to the kernel once the node has sent nothing for a second
/// after a burst of messages (a run of `list` replies, republished documents), so that the memory
/// a burst used does not stay with the node (``releaseFreeHeapPages()``). While messages keep
/// coming (alarms alerting one after another) it only looks once a second, and it never runs in
/// their midst: with one malloc arena, the release holds every thread's allocations meanwhile.
/// Nothing runs at idle.
struct HeapReleaseService: Service {
    /// A value when a burst begins (buffering one).
    let bursts: AsyncStream<Void>
    let messagesSent: @Sendable () -> Int
    var quietPeriod: Duration = .seconds(1)
    var release: @Sendable () -> Void = { releaseFreeHeapPages() }

    func run() async throws {
        for await _ in bursts.cancelOnGracefulShutdown() {
            do {
                try await cancelWhenGracefulShutdown {
                    var sent = messagesSent(), before: Int
                    repeat {
                        before = sent
                        try await TimerFDClock().sleep(for: quietPeriod)
                        sent = messagesSent()
                    } while sent != before
                }
            } catch is CancellationError { return }
            release()
        }
    }
}

/// Keeps the node's sense of time right: wall-clock steps, the system's time zone, and the
/// clock's synchronization status.
struct TimeKeeperService: Service {
    let node: LocalAlarmNode
    let bridge: MQTTBridge
    /// The system's zone changes are followed unless the configuration fixes one.
    let timeZone: TimeZoneSource
    let logger: Logger

    func run() async throws {
        // Nothing here needs a goodbye: on graceful shutdown every watch simply stops.
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { try await followClockSteps() }
                    group.addTask { try await followTimeZone() }
                    group.addTask { try await watchSynchronization() }
                }
            }
        } catch is CancellationError {}
    }

    private func followClockSteps() async throws {
        for try await jump in WallClockJumps(logger: logger) {
            // A suspend/resume or a settimeofday to the same time cancels the timer too: a
            // step this small moves nothing that matters, so it is not worth re-publishing.
            guard abs(jump.stepSeconds) >= 0.001 else {
                logger.debug("wall clock set without a real step", metadata: ["step": "\(jump.stepSeconds)"])
                continue
            }
            logger.notice("wall clock stepped; re-planning", metadata: ["step": "\(jump.stepSeconds)"])
            await node.wallClockStepped(by: jump.stepSeconds)
            await refreshSynchronization()
        }
    }

    private func followTimeZone() async throws {
        for try await identifier in TimeZoneWatcher(logger: logger) {
            guard timeZone.configuredZone.withLock({ $0 }) == nil, let zone = TimeZone(identifier: identifier) else { continue }
            logger.notice("system time zone changed", metadata: ["timeZone": "\(identifier)"])
            await node.changeTimeZone(to: zone)
            bridge.updateStatus { $0.timeZone = identifier }
        }
    }

    /// Until the kernel reports the clock synchronized, looks again as ``SynchronizationChecks``
    /// plans, and trusts the clock anyway once its bound has passed. Once synchronized, never again.
    private func watchSynchronization() async throws {
        var checks = SynchronizationChecks(startedAt: ContinuousClock.now)
        guard !(await refreshSynchronization()) else { return }
        while true {
            try await TimerFDClock().sleep(until: checks.nextLook)
            guard !(await refreshSynchronization()) else { return }
            if checks.trustsAnyway(at: .now) {
                logger.warning("clock still not synchronized; trusting it anyway",
                               metadata: ["waited": "\(SynchronizationChecks.untrustedClockBound)"])
                await node.setClockTrusted(true)
            }
            checks.planNextLook(after: .now, alertsHeld: !(await node.withEngine { $0.heldAlarms.isEmpty }))
        }
    }

    @discardableResult
    private func refreshSynchronization() async -> Bool {
        let synchronized = (try? ClockSynchronization.isSynchronized()) ?? false
        bridge.updateStatus { $0.clockSynchronized = synchronized }
        if synchronized { await node.setClockTrusted(true) }
        return synchronized
    }
}

/// Tells systemd the node is ready and feeds its watchdog (sd_notify), when run under systemd:
/// each time only once `nodeAnswers` has returned, so that a node stuck on its actor is restarted.
struct ServiceNotifierService: Service {
    let notifier: ServiceNotifier
    let nodeAnswers: @Sendable () async -> Void
    let logger: Logger

    func run() async throws {
        guard notifier.isEnabled else { return try await gracefulShutdown() }
        try notifier.ready()
        logger.info("ready")
        if let timeout = notifier.watchdogTimeout() {
            // Shutdown ends the sleep: the services before this one, the hardware among them,
            // shut down only once it returns.
            do {
                try await cancelWhenGracefulShutdown {
                    while true {
                        await nodeAnswers()
                        try notifier.watchdog()
                        try await TimerFDClock().sleep(for: timeout / 2)
                    }
                }
            } catch is CancellationError {}
        } else {
            try await gracefulShutdown()
        }
        try notifier.stopping()
    }
}
