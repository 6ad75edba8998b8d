import AlarmHardware
import AlarmKit
import Foundation
import LinuxSystem
import Logging
import ServiceLifecycle
import Synchronization

/// The node's buzzer, LED and buttons, real or simulated: shows the alarms' state on the
/// outputs, turns presses into alarm operations, and asks the authorization prompt.
///
/// `show(_:)` is called (non-blocking) after every engine change; `run()` drives the outputs
/// and reads the buttons until shutdown, and leaves the buzzer and LED off.
public final class NodeHardware: Service, AuthorizationPrompt, Sendable {
    /// What the outputs should show.
    struct Display: Sendable, Equatable {
        var alert: (sound: String, since: Date)?
        var countdownRunning = false
        var promptActive = false

        static func == (lhs: Display, rhs: Display) -> Bool {
            lhs.alert?.sound == rhs.alert?.sound && lhs.alert?.since == rhs.alert?.since
                && lhs.countdownRunning == rhs.countdownRunning && lhs.promptActive == rhs.promptActive
        }
    }

    /// The parts: real GPIO lines or the simulation.
    public struct Parts: Sendable {
        public var buzzer: any OutputLine
        public var led: (any OutputLine)?
        public var buttons: any ButtonEdgeSource
        public var layout: ButtonLayout

        public init(buzzer: any OutputLine, led: (any OutputLine)?, buttons: any ButtonEdgeSource, layout: ButtonLayout) {
            self.buzzer = buzzer
            self.led = led
            self.buttons = buttons
            self.layout = layout
        }
    }

    private let parts: Parts
    private let driver: HardwareDriver<TimerFDClock>
    private let detector: ButtonPressDetector<TimerFDClock>
    private let node: LocalAlarmNode
    private let promptDuration: Duration
    private let publishEvent: @Sendable (AlarmEvent) -> Void
    private let logger: Logger
    private let displays: AsyncStream<Display>
    private let displayInput: AsyncStream<Display>.Continuation
    private let state = Mutex(State())

    private struct State {
        var display = Display()
        /// True while a prompt waits for a button.
        var promptOpen = false
        var prompt: CheckedContinuation<AlarmManager.AuthorizationState, Never>?
        var answer: AlarmManager.AuthorizationState?
    }

    public init(parts: Parts, node: LocalAlarmNode, configuration: NodeConfiguration.Hardware,
                publishEvent: @escaping @Sendable (AlarmEvent) -> Void, logger: Logger) {
        self.parts = parts
        self.node = node
        self.publishEvent = publishEvent
        self.logger = logger
        self.promptDuration = .seconds(configuration.promptDuration)
        let clock = TimerFDClock()
        driver = HardwareDriver(buzzer: parts.buzzer, led: parts.led, clock: clock,
                                configuration: .init(escalateAfter: .seconds(configuration.escalateAfter)), logger: logger)
        detector = ButtonPressDetector(
            timing: ButtonTiming(debounce: .seconds(configuration.debounce), longPress: .seconds(configuration.longPress)),
            layout: parts.layout, clock: clock, logger: logger)
        (displays, displayInput) = AsyncStream.makeStream(of: Display.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Shows the engine's state: the oldest alert's sound while anything alerts, a blinking LED
    /// while a countdown runs. Non-blocking; the latest state wins.
    public func show(_ engine: AlarmEngine) {
        let oldest = engine.alerting.first
        update { display in
            display.alert = oldest.map { ($0.sound.name, $0.since) }
            display.countdownRunning = engine.hasRunningCountdown
        }
    }

    private func update(_ change: (inout Display) -> Void) {
        state.withLock { state in
            let before = state.display
            change(&state.display)
            if state.display != before { displayInput.yield(state.display) }
        }
    }

    // MARK: The authorization prompt

    /// Chirps and blinks for the prompt's duration: stop authorizes, snooze denies, nothing
    /// leaves the decision open.
    public func requestDecision() async -> AlarmManager.AuthorizationState {
        logger.notice("authorization prompt: press stop to allow, snooze to deny")
        state.withLock { state in
            state.promptOpen = true
            state.answer = nil
        }
        update { $0.promptActive = true }
        let decision = await withTaskGroup(of: AlarmManager.AuthorizationState?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let answered: AlarmManager.AuthorizationState? = self.state.withLock { state in
                        guard state.promptOpen else { return state.answer ?? .notDetermined }
                        state.prompt = continuation
                        return nil
                    }
                    if let answered { continuation.resume(returning: answered) }
                }
            }
            group.addTask { [promptDuration] in
                try? await TimerFDClock().sleep(for: promptDuration)
                return nil
            }
            let first = await group.next() ?? nil
            // Whichever finished first, the prompt is over.
            self.answerPrompt(.notDetermined)
            group.cancelAll()
            return first ?? .notDetermined
        }
        update { $0.promptActive = false }
        logger.notice("authorization prompt over", metadata: ["decision": "\(decision.rawValue)"])
        return decision
    }

    /// Answers an open prompt; false when none is open.
    @discardableResult
    private func answerPrompt(_ decision: AlarmManager.AuthorizationState) -> Bool {
        let (wasOpen, waiting) = state.withLock { state in
            defer {
                state.promptOpen = false
                state.prompt = nil
            }
            if state.promptOpen { state.answer = decision }
            return (state.promptOpen, state.prompt)
        }
        waiting?.resume(returning: decision)
        return wasOpen
    }

    // MARK: Running

    public func run() async throws {
        // A restored node may already be counting down (or alerting): show it from the start.
        show(await node.currentEngine)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.driver.run() }
            group.addTask { try await self.detector.run(edges: self.parts.buttons) }
            group.addTask {
                for await display in self.displays {
                    await self.driver.update(
                        alerting: display.alert.map { alert in
                            .init(sound: alert.sound, since: ContinuousClock.now - .seconds(max(0, Date().timeIntervalSince(alert.since))))
                        },
                        countdownRunning: display.countdownRunning, promptActive: display.promptActive)
                }
            }
            group.addTask {
                for await press in self.detector.presses { await self.handle(press) }
            }
            try await gracefulShutdown()
            group.cancelAll()
        }
        await driver.shutdown()
        displayInput.finish()
        logger.info("hardware off")
    }

    private func handle(_ press: ButtonPress) async {
        let button: PressedButton = press.button == .stop ? .stop : .snooze
        let kind: PressKind = press.kind == .long ? .long : .short
        logger.info("button pressed", metadata: ["button": "\(button.rawValue)", "press": "\(kind.rawValue)"])
        publishEvent(AlarmEvent(.button, alarmID: nil, at: Date(),
                                details: ["button": .string(button.rawValue), "press": .string(kind.rawValue)]))
        if answerPrompt(button == .stop ? .authorized : .denied) { return }
        for (action, error) in await ButtonActions.press(button, kind, on: node) {
            logger.warning("button action refused", metadata: ["action": "\(action)", "error": "\(error.message)"])
        }
    }
}
