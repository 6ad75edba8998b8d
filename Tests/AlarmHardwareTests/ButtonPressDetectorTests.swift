import Logging
import Testing
import AlarmHardware

private func ms(_ value: Double) -> UInt64 { UInt64(value * 1_000_000) }

@Suite(.timeLimit(.minutes(1))) struct ButtonPressDetectorTests {
    let clock = ManualClock()

    /// Injects a bouncy edge burst ending at `pressed`, with edge timestamps from `start` ms.
    func burst(_ buttons: SimulatedButtons<ManualClock>, _ button: Button, pressed: Bool, at start: Double) {
        for (offset, level) in [(0.0, pressed), (1.5, !pressed), (3.5, pressed), (5.0, !pressed), (7.0, pressed)] {
            buttons.inject(ButtonEdge(button: button, pressed: level, timestamp: ms(start + offset)))
        }
    }

    @Test func bouncyEdgesBecomeOneShortPress() async throws {
        let buttons = SimulatedButtons(clock: clock)
        let detector = ButtonPressDetector(clock: clock, logger: Logger(label: "test"))
        let run = Task { try await detector.run(edges: buttons) }
        var presses = detector.presses.makeAsyncIterator()

        burst(buttons, .stop, pressed: true, at: 0)
        burst(buttons, .stop, pressed: false, at: 180)
        await buttons.waitUntilConsumed()
        // Every edge arrived at clock 0, the last one (187 ms) taken as "now":
        // the release settles 30 ms later, and the detector sleeps until exactly then.
        await clock.waitForSleeper(until: .ms(30))
        clock.advance(to: .ms(30))
        #expect(await presses.next() == ButtonPress(button: .stop, kind: .short, at: ms(180)))

        buttons.finish()
        try await run.value
        #expect(await presses.next() == nil, "presses end with the edge stream")
    }

    @Test func longPressArrivesWhileTheButtonIsStillHeld() async throws {
        let buttons = SimulatedButtons(clock: clock)
        let detector = ButtonPressDetector(clock: clock, logger: Logger(label: "test"))
        let run = Task { try await detector.run(edges: buttons) }
        var presses = detector.presses.makeAsyncIterator()

        burst(buttons, .snooze, pressed: true, at: 0)
        await buttons.waitUntilConsumed()
        // Received at clock 0, the last bounce (7 ms) taken as "now": the press
        // settles at clock 30 ms and reaches 1500 ms of hold at clock 1493 ms.
        await clock.waitForSleeper(until: .ms(30))
        clock.advance(to: .ms(30))
        await clock.waitForSleeper(until: .ms(1493))
        clock.advance(to: .ms(1493))
        #expect(await presses.next() == ButtonPress(button: .snooze, kind: .long, at: ms(1500)))
        run.cancel()
        try await run.value
    }

    @Test func simulatedPressWithDurationUsesTheClockAndSingleButtonLayout() async throws {
        let buttons = SimulatedButtons(clock: clock)
        let detector = ButtonPressDetector(layout: .singleButton, clock: clock, logger: Logger(label: "test"))
        let run = Task { try await detector.run(edges: buttons) }
        var presses = detector.presses.makeAsyncIterator()

        let press = Task { try await buttons.press(.stop, duration: .milliseconds(200)) }
        await clock.waitForSleeper(until: .ms(200))
        await buttons.waitUntilConsumed()
        clock.advance(to: .ms(200))
        try await press.value
        await buttons.waitUntilConsumed()
        clock.advance(to: .ms(400))
        #expect(await presses.next() == ButtonPress(button: .snooze, kind: .short, at: ms(200)),
                "single-button layout: a short press snoozes")

        let long = Task { try await buttons.press(.stop, duration: .seconds(2)) }
        await clock.waitForSleeper(until: .ms(2400))
        await buttons.waitUntilConsumed()
        clock.advance(to: .ms(2400))
        try await long.value
        #expect(await presses.next() == ButtonPress(button: .stop, kind: .long, at: ms(1900)),
                "single-button layout: a long press stops")
        run.cancel()
        try await run.value
    }
}
