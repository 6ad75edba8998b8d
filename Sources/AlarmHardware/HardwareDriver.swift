import Logging

/// Drives the buzzer and the optional LED from the daemon's alarm state.
///
/// The daemon calls ``update(alerting:countdownRunning:promptActive:)`` whenever
/// its state changes; the outputs change at once. ``run()`` (a service's run
/// loop) then sleeps on the injected clock exactly until the next edge of the
/// buzzer pattern or LED blink, and nothing else wakes it.
///
/// - Buzzer: the alerting sound's pattern (escalating after
///   ``Configuration/escalateAfter``); otherwise the chirp while an
///   authorization prompt is active; otherwise off.
/// - LED: on while alerting, fast blink during a prompt, slow blink while a
///   countdown runs, otherwise off.
///
/// On cancellation of ``run()``, on ``shutdown()`` and after an output fails,
/// both outputs are switched off.
public actor HardwareDriver<C: Clock> where C.Duration == Duration {
    /// An alert in progress: what to play, and since when (escalation and the
    /// pattern's phase count from `since`).
    public struct Alert: Sendable, Hashable {
        public var sound: String
        public var since: C.Instant

        public init(sound: String, since: C.Instant) {
            self.sound = sound
            self.since = since
        }
    }

    public struct Configuration: Sendable, Hashable {
        /// How long an alert plays its pattern before moving to the denser
        /// one; `nil` never escalates.
        public var escalateAfter: Duration?

        public init(escalateAfter: Duration? = .seconds(60)) {
            self.escalateAfter = escalateAfter
        }
    }

    private let buzzer: any OutputLine
    private let led: (any OutputLine)?
    private let clock: C
    private let configuration: Configuration
    private let logger: Logger
    private let wake = WakeSignal()

    private var alert: Alert?
    private var promptSince: C.Instant?
    private var ledMode = LEDMode.off
    private var ledSince: C.Instant
    private var written: (buzzer: Bool?, led: Bool?) = (nil, nil)
    private var isShutDown = false
    private var failure: (any Error)?

    public init(buzzer: any OutputLine, led: (any OutputLine)?, clock: C,
                configuration: Configuration = Configuration(), logger: Logger) {
        self.buzzer = buzzer
        self.led = led
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        self.ledSince = clock.now
    }

    /// Sets what the hardware shows. `alerting` is `nil` when no alarm alerts.
    public func update(alerting: Alert?, countdownRunning: Bool, promptActive: Bool) {
        guard !isShutDown, failure == nil else { return }
        let now = clock.now
        alert = alerting
        if !promptActive {
            promptSince = nil
        } else if promptSince == nil {
            promptSince = now
        }
        let mode: LEDMode = alerting != nil ? .on : promptActive ? .fastBlink : countdownRunning ? .slowBlink : .off
        if mode != ledMode {
            ledMode = mode
            ledSince = now
        }
        do {
            _ = try apply(at: now)
        } catch {
            fail(error)
        }
        wake.signal()
    }

    /// Runs until cancelled or ``shutdown()``; rethrows an output failure after
    /// switching everything off. Once it returns, the outputs stay off and
    /// later updates are ignored.
    public func run() async throws {
        logger.debug("hardware driver started")
        defer {
            isShutDown = true
            switchOff()
        }
        while !Task.isCancelled, !isShutDown {
            if let failure { throw failure }
            let next: C.Instant?
            do {
                next = try apply(at: clock.now)
            } catch {
                fail(error)
                throw error
            }
            await wake.wait(until: next, on: clock)
        }
        logger.debug("hardware driver stopped")
    }

    /// Switches the buzzer and the LED off for good and ends ``run()``.
    public func shutdown() {
        isShutDown = true
        switchOff()
        wake.signal()
    }

    /// Writes the levels due at `now` and returns when the next change is due.
    private func apply(at now: C.Instant) throws -> C.Instant? {
        let buzzerLevel: SignalLevel<C.Instant>
        if let alert {
            buzzerLevel = BuzzerSound(named: alert.sound, escalateAfter: configuration.escalateAfter)
                .level(startedAt: alert.since, at: now)
        } else if let promptSince {
            buzzerLevel = BuzzerPattern.chirp.level(startedAt: promptSince, at: now)
        } else {
            buzzerLevel = SignalLevel(isOn: false, nextChange: nil)
        }
        if written.buzzer != buzzerLevel.isOn {
            try buzzer.set(buzzerLevel.isOn)
            written.buzzer = buzzerLevel.isOn
        }
        guard let led else { return buzzerLevel.nextChange }
        let ledLevel = ledMode.level(startedAt: ledSince, at: now)
        if written.led != ledLevel.isOn {
            try led.set(ledLevel.isOn)
            written.led = ledLevel.isOn
        }
        return [buzzerLevel.nextChange, ledLevel.nextChange].compactMap { $0 }.min()
    }

    private func fail(_ error: any Error) {
        logger.error("hardware output failed; switching buzzer and LED off", metadata: ["error": "\(error)"])
        failure = error
        switchOff()
    }

    private func switchOff() {
        let lines: [(String, (any OutputLine)?)] = [("buzzer", buzzer), ("led", led)]
        for (name, line) in lines {
            guard let line else { continue }
            do {
                try line.set(false)
            } catch {
                logger.error("cannot switch output off", metadata: ["output": "\(name)", "error": "\(error)"])
            }
        }
        written = (false, led == nil ? nil : false)
    }
}
