import Logging
import Synchronization
import Testing
@testable import AlarmHardware

private typealias Instant = ManualClock.Instant

/// An output that fails on demand.
private final class FailingLine: OutputLine {
    struct Failure: Error {}
    let failing = Mutex(false)
    let writes = Mutex<[Bool]>([])

    func set(_ on: Bool) throws {
        writes.withLock { $0.append(on) }
        if failing.withLock({ $0 }) { throw Failure() }
    }
}

private struct Rig {
    let clock = ManualClock()
    let buzzer = SimulatedLine()
    let led = SimulatedLine()
    let driver: HardwareDriver<ManualClock>
    /// What the driver reported as shown, in order.
    let shown = Reports()

    final class Reports: Sendable {
        private let reports = Mutex<[HardwareShown]>([])
        func append(_ report: HardwareShown) { reports.withLock { $0.append(report) } }
        var all: [HardwareShown] { reports.withLock { $0 } }
    }

    init(escalateAfter: Duration? = .seconds(60)) {
        let shown = self.shown
        driver = HardwareDriver(buzzer: buzzer, led: led, clock: clock,
                                escalateAfter: escalateAfter,
                                logger: Logger(label: "test"), onShownChange: { shown.append($0) })
    }

    /// Waits until the driver sleeps until exactly `deadline`, then moves the
    /// clock there and waits until it sleeps until `next`.
    func step(to deadline: Instant, thenSleepsUntil next: Instant) async {
        await clock.waitForSleeper(until: deadline)
        clock.advance(to: deadline)
        await clock.waitForSleeper(until: next)
    }

    /// Follows the outputs through a list of (instant, buzzer, led) expectations, checking the
    /// outputs at every one of them; each instant must be exactly where the driver wakes up next,
    /// and after the last one the driver must sleep until `last` (the clock stays at the last instant).
    func expect(_ timeline: [(Instant, buzzer: Bool, led: Bool)], thenSleepsUntil last: Instant,
                sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(!timeline.isEmpty, "an empty timeline checks nothing", sourceLocation: sourceLocation)
        for (index, (instant, buzzerOn, ledOn)) in timeline.enumerated() {
            let next = index + 1 < timeline.count ? timeline[index + 1].0 : last
            await step(to: instant, thenSleepsUntil: next)
            #expect(buzzer.isOn == buzzerOn, "buzzer at \(instant)", sourceLocation: sourceLocation)
            #expect(led.isOn == ledOn, "LED at \(instant)", sourceLocation: sourceLocation)
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct HardwareDriverTests {
    @Test func buzzerFollowsTheAlertPatternAndTheLEDIsLit() async throws {
        let rig = Rig()
        let run = Task { try await rig.driver.run() }
        rig.driver.update(alerting: .init(sound: "default", since: rig.clock.now),
                                countdownRunning: false, promptActive: false)
        #expect(rig.buzzer.isOn && rig.led.isOn, "outputs change at once on update")
        await rig.expect([
            (.ms(100), false, true), (.ms(200), true, true), (.ms(300), false, true), (.ms(400), true, true),
            (.ms(500), false, true), (.ms(1200), true, true), (.ms(1300), false, true), (.ms(1400), true, true),
        ], thenSleepsUntil: .ms(1500))
        run.cancel()
        try await run.value
        #expect(!rig.buzzer.isOn && !rig.led.isOn, "cancellation switches everything off")
    }

    @Test func alertEscalatesToADenserPattern() async throws {
        let rig = Rig(escalateAfter: .seconds(2))
        let run = Task { try await rig.driver.run() }
        // An alert that began before this update (e.g. restored after a restart): the phase counts from `since`.
        rig.clock.advance(to: .ms(500))
        rig.driver.update(alerting: .init(sound: "gentle", since: .ms(0)), countdownRunning: false,
                                promptActive: false)
        #expect(!rig.buzzer.isOn)
        await rig.expect([
            (.ms(2000), true, true), (.ms(2100), false, true), (.ms(2200), true, true), (.ms(2300), false, true),
            (.ms(2400), true, true), (.ms(2500), false, true), (.ms(3200), true, true),
        ], thenSleepsUntil: .ms(3300))
        run.cancel()
        try await run.value
    }

    @Test func whatIsShownIsReportedOncePerChangeNotPerBeep() async throws {
        let rig = Rig(escalateAfter: .seconds(2))
        let run = Task { try await rig.driver.run() }
        rig.clock.advance(to: .ms(500))
        rig.driver.update(alerting: .init(sound: "gentle", since: .ms(0)), countdownRunning: false, promptActive: false)
        // In a pause of the pattern; then the escalation at 2 s and its beeps.
        await rig.expect([(.ms(2000), true, true), (.ms(2100), false, true), (.ms(2200), true, true)], thenSleepsUntil: .ms(2300))
        rig.driver.update(alerting: nil, countdownRunning: true, promptActive: false)
        await rig.clock.waitForSleeper(until: .ms(2700))
        await rig.expect([(.ms(2700), false, false), (.ms(3200), false, true)], thenSleepsUntil: .ms(3700))
        run.cancel()
        try await run.value
        #expect(rig.shown.all == [
            HardwareShown(buzzer: "gentle", led: .on), HardwareShown(buzzer: "gentle, escalated", led: .on),
            HardwareShown(buzzer: nil, led: .slowBlink), HardwareShown(),
        ])
        #expect(HardwareShown(buzzer: "gentle, escalated", led: .on).description == "buzzer sounding (gentle, escalated), LED lit")
        #expect(HardwareShown(led: .slowBlink).description == "buzzer silent, LED blinking slowly")
    }

    @Test func buzzerStopsWhenNothingAlertsAndTheLEDShowsTheCountdown() async throws {
        let rig = Rig()
        let run = Task { try await rig.driver.run() }
        rig.driver.update(alerting: .init(sound: "urgent", since: rig.clock.now), countdownRunning: true,
                                promptActive: false)
        await rig.expect([(.ms(100), false, true)], thenSleepsUntil: .ms(200))
        // The clock is at 100 ms: the alert ends, a countdown still runs.
        rig.driver.update(alerting: nil, countdownRunning: true, promptActive: false)
        #expect(!rig.buzzer.isOn, "off as soon as nothing alerts")
        #expect(rig.led.isOn, "slow blink starts lit")
        await rig.clock.waitForSleeper(until: .ms(600))
        // The clock stays at 1100 ms, the LED lit, so the update below must switch it off.
        await rig.expect([(.ms(600), false, false), (.ms(1100), false, true)], thenSleepsUntil: .ms(1600))
        rig.driver.update(alerting: nil, countdownRunning: false, promptActive: false)
        #expect(!rig.buzzer.isOn && !rig.led.isOn)
        run.cancel()
        try await run.value
        #expect(rig.clock.pendingDeadlines.isEmpty, "nothing left sleeping")
    }

    @Test func authorizationPromptChirpsAndBlinksFast() async throws {
        let rig = Rig()
        let run = Task { try await rig.driver.run() }
        rig.clock.advance(to: .ms(1000))
        rig.driver.update(alerting: nil, countdownRunning: true, promptActive: true)
        #expect(rig.buzzer.isOn && rig.led.isOn)
        // chirp: on 40, off 80, on 40, off 1840; fast blink: on 100, off 100.
        await rig.expect([
            (.ms(1040), false, true), (.ms(1100), false, false), (.ms(1120), true, false), (.ms(1160), false, false),
            (.ms(1200), false, true),
        ], thenSleepsUntil: .ms(1300))
        // At 1200 ms an alarm alerts during the prompt and wins: its pattern, LED steady on.
        rig.driver.update(alerting: .init(sound: "urgent", since: rig.clock.now), countdownRunning: true,
                                promptActive: true)
        #expect(rig.buzzer.isOn && rig.led.isOn)
        await rig.clock.waitForSleeper(until: .ms(1300))
        await rig.expect([(.ms(1300), false, true), (.ms(1400), true, true), (.ms(1500), false, true)],
                         thenSleepsUntil: .ms(1600))
        run.cancel()
        try await run.value
    }

    @Test func shutdownSwitchesOffEndsRunAndIgnoresLaterUpdates() async throws {
        let rig = Rig()
        let run = Task { try await rig.driver.run() }
        rig.driver.update(alerting: .init(sound: "default", since: rig.clock.now), countdownRunning: false,
                                promptActive: false)
        #expect(rig.buzzer.isOn)
        rig.driver.shutdown()
        #expect(!rig.buzzer.isOn && !rig.led.isOn)
        try await run.value
        rig.driver.update(alerting: .init(sound: "default", since: rig.clock.now), countdownRunning: true,
                                promptActive: false)
        #expect(!rig.buzzer.isOn && !rig.led.isOn)
    }

    @Test func outputFailureSwitchesOffAndEndsRunWithTheError() async throws {
        let clock = ManualClock()
        let buzzer = FailingLine()
        let led = SimulatedLine()
        let driver = HardwareDriver(buzzer: buzzer, led: led, clock: clock, logger: Logger(label: "test"))
        let run = Task { try await driver.run() }
        driver.update(alerting: .init(sound: "default", since: clock.now), countdownRunning: false,
                            promptActive: false)
        #expect(led.isOn)
        await clock.waitForSleeper(until: .ms(100))
        buzzer.failing.withLock { $0 = true }
        clock.advance(to: .ms(100))
        await #expect(throws: FailingLine.Failure.self) { try await run.value }
        #expect(!led.isOn)
        #expect(buzzer.writes.withLock { $0 }.suffix(2) == [false, false], "the failed write, then the switch-off attempt")
    }

    @Test func simulatedLineReportsItsStateAndChanges() {
        let line = SimulatedLine()
        let changes = Mutex<[SimulatedLine.Change]>([])
        line.observe { change in changes.withLock { $0.append(change) } }
        #expect(!line.isOn)
        let beforeOn = ContinuousClock.now
        line.set(true)
        let afterOn = ContinuousClock.now
        #expect(line.isOn)
        line.set(true)
        line.set(false)
        let seen = changes.withLock { $0 }
        #expect(seen.map(\.isOn) == [true, false], "repeated writes of the same level are not changes")
        #expect(seen.first.map { beforeOn <= $0.at && $0.at <= afterOn } == true, "stamped when it was set")
        #expect(seen.count == 2 && seen[0].at <= seen[1].at)
        #expect(!line.isOn)
    }
}
