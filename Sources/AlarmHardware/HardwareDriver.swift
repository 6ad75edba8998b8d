import Logging
import Synchronization

/// Drives the buzzer and the optional LED from the daemon's alarm state.
///
/// The daemon calls ``update(alerting:countdownRunning:promptActive:)`` whenever its state changes;
/// the outputs change at once, on the caller's thread (an alarm's buzzer must not wait for a task
/// to be scheduled). ``run()`` (a service's run loop) then sleeps on the injected clock exactly
/// until the next edge of the buzzer pattern or LED blink, or until the next update. Writing an
/// output line must be quick and must not block (a GPIO ioctl).
///
/// - Buzzer: the alerting sound's pattern (escalating after `escalateAfter`); otherwise the chirp
///   while an authorization prompt is active; otherwise off.
/// - LED: on while alerting, fast blink during a prompt, slow blink while a
///   countdown runs, otherwise off.
///
/// On cancellation of ``run()``, on ``shutdown()`` and after an output fails,
/// both outputs are switched off.
///
/// What a person near the hardware notices (``HardwareShown``: the buzzer sounding which
/// pattern, the LED dark, lit or blinking) is reported to `onShownChange` once per change,
/// not once per beep or blink.
public final class HardwareDriver<C: Clock>: Sendable where C.Duration == Duration {
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

    private let buzzer: any OutputLine
    private let led: (any OutputLine)?
    private let clock: C
    private let escalateAfter: Duration?
    private let logger: Logger
    private let wake = WakeSignal()
    private let onShownChange: (@Sendable (HardwareShown) -> Void)?

    /// What is shown and what was written. Lines are written with the lock held, so that an
    /// update and the run loop never interleave their writes.
    private struct State {
        var alert: Alert?
        var promptSince: C.Instant?
        var ledMode = LEDMode.off
        var ledSince: C.Instant
        var written: (buzzer: Bool?, led: Bool?) = (nil, nil)
        var shown = HardwareShown()
        var isShutDown = false
        var failure: (any Error)?
    }

    private let state: Mutex<State>

    /// - Parameters:
    ///   - escalateAfter: how long an alert plays its pattern before moving to the denser one;
    ///     `nil` never escalates.
    ///   - onShownChange: called with what the outputs show each time it changes, with the
    ///     driver's lock held: it must not block.
    public init(buzzer: any OutputLine, led: (any OutputLine)?, clock: C,
                escalateAfter: Duration? = .seconds(60), logger: Logger,
                onShownChange: (@Sendable (HardwareShown) -> Void)? = nil) {
        self.onShownChange = onShownChange
        self.buzzer = buzzer
        self.led = led
        self.clock = clock
        self.escalateAfter = escalateAfter
        self.logger = logger
        self.state = Mutex(State(ledSince: clock.now))
    }

    /// Sets what the hardware shows, writing the lines before it returns. `alerting` is `nil`
    /// when no alarm alerts.
    public func update(alerting: Alert?, countdownRunning: Bool, promptActive: Bool) {
        state.withLock { state in
            guard !state.isShutDown, state.failure == nil else { return }
            let now = clock.now
            state.alert = alerting
            state.promptSince = promptActive ? state.promptSince ?? now : nil
            let mode: LEDMode = alerting != nil ? .on : promptActive ? .fastBlink : countdownRunning ? .slowBlink : .off
            if mode != state.ledMode {
                state.ledMode = mode
                state.ledSince = now
            }
            do {
                _ = try apply(at: now, to: &state)
            } catch { fail(error, &state) }
        }
        wake.signal()
    }

    /// Runs until cancelled or ``shutdown()``; rethrows an output failure after switching
    /// everything off. Once it returns, the outputs stay off and later updates are ignored.
    public func run() async throws {
        logger.debug("hardware driver started")
        defer { shutdown() }
        while !Task.isCancelled {
            let next: Result<C.Instant?, any Error>? = state.withLock { state in
                if state.isShutDown { return nil }
                if let failure = state.failure { return .failure(failure) }
                do {
                    return .success(try apply(at: clock.now, to: &state))
                } catch {
                    fail(error, &state)
                    return .failure(error)
                }
            }
            guard let next else { break }
            await wake.wait(until: try next.get(), on: clock)
        }
        logger.debug("hardware driver stopped")
    }

    /// Switches the buzzer and the LED off for good and ends ``run()``.
    public func shutdown() {
        state.withLock { state in
            state.isShutDown = true
            switchOff(&state)
        }
        wake.signal()
    }

    /// Writes the levels due at `now` and returns when the next change is due.
    private func apply(at now: C.Instant, to state: inout State) throws -> C.Instant? {
        let buzzerLevel: SignalLevel<C.Instant>
        var shown = HardwareShown(led: led == nil ? .off : state.ledMode)
        if let alert = state.alert {
            let sound = BuzzerSound(named: alert.sound, escalateAfter: escalateAfter)
            let escalated = sound.escalated != nil && alert.since.duration(to: now) >= sound.escalateAfter
            shown.buzzer = escalated ? "\(alert.sound), escalated" : alert.sound
            buzzerLevel = sound.level(startedAt: alert.since, at: now)
        } else if let promptSince = state.promptSince {
            shown.buzzer = "chirp"
            buzzerLevel = BuzzerPattern.chirp.level(startedAt: promptSince, at: now)
        } else {
            buzzerLevel = SignalLevel(isOn: false, nextChange: nil)
        }
        report(shown, &state)
        if state.written.buzzer != buzzerLevel.isOn {
            try buzzer.set(buzzerLevel.isOn)
            state.written.buzzer = buzzerLevel.isOn
        }
        guard let led else { return buzzerLevel.nextChange }
        let ledLevel = state.ledMode.level(startedAt: state.ledSince, at: now)
        if state.written.led != ledLevel.isOn {
            try led.set(ledLevel.isOn)
            state.written.led = ledLevel.isOn
        }
        return [buzzerLevel.nextChange, ledLevel.nextChange].compactMap { $0 }.min()
    }

    private func fail(_ error: any Error, _ state: inout State) {
        logger.error("hardware output failed; switching buzzer and LED off", metadata: ["error": "\(error)"])
        state.failure = error
        switchOff(&state)
    }

    private func switchOff(_ state: inout State) {
        let lines: [(String, (any OutputLine)?)] = [("buzzer", buzzer), ("led", led)]
        for case let (name, line?) in lines {
            do {
                try line.set(false)
            } catch { logger.error("cannot switch output off", metadata: ["output": "\(name)", "error": "\(error)"]) }
        }
        state.written = (false, led == nil ? nil : false)
        report(HardwareShown(), &state)
    }

    private func report(_ shown: HardwareShown, _ state: inout State) {
        guard shown != state.shown else { return }
        state.shown = shown
        onShownChange?(shown)
    }
}

/// What a person near the hardware notices: whether the buzzer sounds, and which pattern, and
/// how the LED shows.
public struct HardwareShown: Sendable, Hashable, CustomStringConvertible {
    /// The sound the buzzer plays (`"default"`, `"gentle, escalated"`, `"chirp"` during an
    /// authorization prompt), nil while it is silent.
    public var buzzer: String?
    public var led: LEDMode = .off

    /// In words, e.g. `buzzer sounding (default), LED lit`.
    public var description: String {
        let sound = buzzer.map { "buzzer sounding (\($0))" } ?? "buzzer silent"
        let light = switch led {
        case .off: "LED dark"
        case .on: "LED lit"
        case .slowBlink: "LED blinking slowly"
        case .fastBlink: "LED blinking fast"
        }
        return "\(sound), \(light)"
    }
}
