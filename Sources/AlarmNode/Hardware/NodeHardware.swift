import AlarmHardware
import AlarmKit
import FoundationEssentials
import LinuxSystem
import Logging
import ServiceLifecycle
import Synchronization

/// The node's buzzer, LED and buttons, real or simulated: shows the alarms' state on the
/// outputs, turns presses into alarm operations, and asks the authorization prompt.
///
/// `show(_:)` is called on the node's actor for every change, before the change is written: it
/// sets the outputs at once, without blocking. `run()` keeps the buzzer's pattern and the LED's
/// blinking going and reads the buttons until shutdown, and leaves the buzzer and LED off.
public final class NodeHardware: Service, AuthorizationPrompt, Sendable {
    /// What the outputs should show.
    struct Display: Sendable, Equatable {
        var alert: Alert?
        var countdownRunning = false
        var promptActive = false

        struct Alert: Sendable, Equatable {
            var sound: String
            var since: Date
        }
    }

    /// The parts: real GPIO lines or the simulation.
    public struct Parts: Sendable {
        public var buzzer: any OutputLine
        public var led: (any OutputLine)?
        public var buttons: any ButtonEdgeSource
        public var layout: ButtonLayout
    }

    private let parts: Parts
    private let driver: HardwareDriver<TimerFDClock>
    private let detector: ButtonPressDetector<TimerFDClock>
    private let node: LocalAlarmNode
    private let promptDuration: Duration
    private let publishEvent: @Sendable (AlarmEvent) -> Void
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var display = Display()
        /// The open prompt's answer, while a prompt waits for a button.
        var prompt: AwaitedAnswer<AlarmManager.AuthorizationState>?
    }

    /// - Parameter onShownChange: told what the outputs show, once per change a person would
    ///   notice (the simulation prints it); must not block.
    public init(parts: Parts, node: LocalAlarmNode, configuration: NodeConfiguration.Hardware,
                publishEvent: @escaping @Sendable (AlarmEvent) -> Void,
                onShownChange: (@Sendable (HardwareShown) -> Void)? = nil, logger: Logger) {
        self.parts = parts
        self.node = node
        self.publishEvent = publishEvent
        self.logger = logger
        self.promptDuration = .seconds(configuration.promptDuration)
        let clock = TimerFDClock()
        driver = HardwareDriver(buzzer: parts.buzzer, led: parts.led, clock: clock,
                                escalateAfter: .seconds(configuration.escalateAfter), logger: logger,
                                onShownChange: onShownChange)
        detector = ButtonPressDetector(
            timing: ButtonTiming(debounce: .seconds(configuration.debounce), longPress: .seconds(configuration.longPress)),
            layout: parts.layout, clock: clock, logger: logger)
    }

    /// Shows the engine's state: the oldest alert's sound while anything alerts, a blinking LED
    /// while a countdown runs. The outputs change before it returns (writing a line does not
    /// block), so the buzzer sounds in the same turn of the node that starts the alert. An alert
    /// past its timeout never sounds: it is over, though silenced only on the node's next turn.
    public func show(_ engine: AlarmEngine) {
        let oldest = engine.alerting.first { Date() < $0.since + engine.configuration.alertTimeout }
        update { display in
            display.alert = oldest.map { Display.Alert(sound: $0.sound.name, since: $0.since) }
            display.countdownRunning = engine.hasRunningCountdown
        }
    }

    /// Changes what the outputs show and hands it to the driver, under the lock, so that the
    /// driver receives changes in the order they were made.
    private func update(_ change: (inout Display) -> Void) {
        state.withLock { state in
            let before = state.display
            change(&state.display)
            guard state.display != before else { return }
            driver.update(
                alerting: state.display.alert.map { alert in
                    .init(sound: alert.sound, since: ContinuousClock.now - .seconds(max(0, Date().timeIntervalSince(alert.since))))
                },
                countdownRunning: state.display.countdownRunning, promptActive: state.display.promptActive)
        }
    }

    // MARK: The authorization prompt

    /// Chirps and blinks for the prompt's duration: stop authorizes, snooze denies, nothing
    /// leaves the decision open.
    public func requestDecision() async -> AlarmManager.AuthorizationState {
        logger.notice("authorization prompt: press stop to allow, snooze to deny")
        let prompt = AwaitedAnswer<AlarmManager.AuthorizationState>()
        state.withLock { $0.prompt = prompt }
        update { $0.promptActive = true }
        let decision = await prompt.wait(atMost: promptDuration) { try await TimerFDClock().sleep(for: $0) } ?? .notDetermined
        state.withLock { if $0.prompt === prompt { $0.prompt = nil } }
        update { $0.promptActive = false }
        logger.notice("authorization prompt over", metadata: ["decision": "\(decision.rawValue)"])
        return decision
    }

    // MARK: Running

    public func run() async throws {
        // A restored node may already be counting down (or alerting): show it from the start,
        // on the node's actor, so that a change made meanwhile is not overwritten by an older state.
        await node.withEngine { self.show($0) }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.driver.run() }
            group.addTask { try await self.detector.run(edges: self.parts.buttons) }
            group.addTask { for await press in self.detector.presses { await self.handle(press) } }
            try await gracefulShutdown()
            group.cancelAll()
        }
        driver.shutdown()
        logger.info("hardware off")
    }

    /// Acts on a press at once (the buzzer goes quiet before anything is logged), reporting it
    /// with a `button` event that comes before the events of what it did.
    private func handle(_ press: ButtonPress) async {
        let (button, kind) = (press.button, press.kind)
        let event = AlarmEvent(.button, alarmID: nil, at: Date(),
                               details: ["button": .string(button.rawValue), "press": .string(kind.rawValue)])
        let refusals: [(ButtonAction, AlarmNodeError)]
        // While an alarm alerts, its pattern covers the prompt's, and a press is the sleeper's.
        if let prompt = state.withLock({ $0.display.alert == nil ? $0.prompt : nil }) {
            // A press while a prompt shows answers it, and does nothing else. Its event goes
            // first, before the decision's `authorization` event.
            publishEvent(event)
            if prompt.answer(button == .stop ? .authorized : .denied) {
                logger.info("button pressed", metadata: ["button": "\(button.rawValue)", "press": "\(kind.rawValue)", "prompt": "answered"])
                return
            }
            refusals = await ButtonActions.press(button, kind, on: node)
        } else {
            refusals = await ButtonActions.press(button, kind, on: node, reporting: event)
        }
        logger.info("button pressed", metadata: ["button": "\(button.rawValue)", "press": "\(kind.rawValue)"])
        for (action, error) in refusals {
            logger.warning("button action refused", metadata: ["action": "\(action)", "error": "\(error.message)"])
        }
    }
}
