import Testing
@testable import AlarmHardware

/// Milliseconds to edge-timestamp nanoseconds; fractions allowed.
private func ms(_ value: Double) -> UInt64 { UInt64(value * 1_000_000) }

private func edges(_ button: Button, _ sequence: [(Double, Bool)]) -> [ButtonEdge] {
    sequence.map { ButtonEdge(button: button, pressed: $0.1, timestamp: ms($0.0)) }
}

/// A press recorded on a real switch shape: bounce bursts 1.5–3 ms apart.
private func bouncyPress(_ button: Button, at start: Double, releaseAt release: Double) -> [ButtonEdge] {
    edges(button, [
        (start, true), (start + 2, false), (start + 3.5, true), (start + 6, false), (start + 8, true),
        (release, false), (release + 1.5, true), (release + 4, false), (release + 5, true), (release + 7, false),
    ])
}

private func feed(_ debouncer: inout ButtonDebouncer, _ edges: [ButtonEdge]) -> [ButtonPress] {
    edges.flatMap { debouncer.receive($0) }
}

@Suite struct ButtonDebouncerTests {
    @Test func bouncyShortPressIsOneShortPressDatedAtTheRelease() {
        var debouncer = ButtonDebouncer()
        var presses = feed(&debouncer, bouncyPress(.stop, at: 1000, releaseAt: 1250))
        #expect(presses.isEmpty, "the release burst is not settled yet")
        #expect(debouncer.nextDeadline == ms(1257 + 30))
        presses += debouncer.advance(to: ms(1286.9))
        #expect(presses.isEmpty)
        presses += debouncer.advance(to: ms(1287))
        #expect(presses == [ButtonPress(button: .stop, kind: .short, at: ms(1250))])
        #expect(debouncer.nextDeadline == nil)
    }

    @Test func longPressIsReportedAtTheThresholdWhileStillHeld() {
        var debouncer = ButtonDebouncer()
        let press = Array(bouncyPress(.snooze, at: 1000, releaseAt: 4000).prefix(5))
        #expect(feed(&debouncer, press).isEmpty)
        #expect(debouncer.nextDeadline == ms(1038), "settle 30 ms after the last bounce")
        #expect(debouncer.advance(to: ms(1038)).isEmpty)
        #expect(debouncer.nextDeadline == ms(2500), "long-press threshold counted from the first edge")
        #expect(debouncer.advance(to: ms(2499)).isEmpty)
        #expect(debouncer.advance(to: ms(2500)) == [ButtonPress(button: .snooze, kind: .long, at: ms(2500))])
        // The release reports nothing more.
        let release = Array(bouncyPress(.snooze, at: 1000, releaseAt: 4000).suffix(5))
        #expect(feed(&debouncer, release).isEmpty)
        #expect(debouncer.advance(to: ms(5000)).isEmpty)
    }

    @Test func longPressIsFoundEvenWithoutAdvanceCalls() {
        var debouncer = ButtonDebouncer()
        let presses = feed(&debouncer, bouncyPress(.stop, at: 0, releaseAt: 3000))
            + debouncer.advance(to: ms(4000))
        #expect(presses == [ButtonPress(button: .stop, kind: .long, at: ms(1500))])
    }

    @Test func releaseStartingJustBeforeTheThresholdIsShort() {
        var debouncer = ButtonDebouncer()
        var presses = feed(&debouncer, bouncyPress(.stop, at: 1000, releaseAt: 2495))
        presses += debouncer.advance(to: ms(3000))
        #expect(presses == [ButtonPress(button: .stop, kind: .short, at: ms(2495))])
    }

    @Test func glitchShorterThanTheWindowIsIgnored() {
        var debouncer = ButtonDebouncer()
        var presses = feed(&debouncer, edges(.stop, [(100, true), (104, false)]))
        presses += debouncer.advance(to: ms(10_000))
        #expect(presses.isEmpty)
    }

    @Test func glitchDuringALongPressDoesNotEndIt() {
        var debouncer = ButtonDebouncer()
        var presses = feed(&debouncer, edges(.stop, [(0, true), (1480, false), (1483, true)]))
        #expect(presses.isEmpty)
        presses += debouncer.advance(to: ms(1513))
        #expect(presses == [ButtonPress(button: .stop, kind: .long, at: ms(1500))],
                "reported once the glitch settled back to pressed")
    }

    @Test func repeatedLevelsFromLateKernelReadsAreHarmless() {
        // With both edges requested, the v1 kernel API reads the level after
        // the interrupt, so a fast bounce can report the same level twice.
        var debouncer = ButtonDebouncer()
        var presses = feed(&debouncer, edges(.snooze, [(0, true), (2, true), (3, false), (4, true), (300, false), (301, false)]))
        presses += debouncer.advance(to: ms(400))
        #expect(presses == [ButtonPress(button: .snooze, kind: .short, at: ms(300))])
    }

    @Test func twoButtonsAreDebouncedIndependentlyAndReportedInTimeOrder() {
        var debouncer = ButtonDebouncer()
        let stop = bouncyPress(.stop, at: 0, releaseAt: 400)
        let snooze = bouncyPress(.snooze, at: 100, releaseAt: 250)
        let merged = (stop + snooze).sorted { $0.timestamp < $1.timestamp }
        let presses = feed(&debouncer, merged) + debouncer.advance(to: ms(1000))
        #expect(presses == [
            ButtonPress(button: .snooze, kind: .short, at: ms(250)),
            ButtonPress(button: .stop, kind: .short, at: ms(400)),
        ])
    }

    @Test func buttonHeldAtStartupReportsNothingOnRelease() {
        var debouncer = ButtonDebouncer()
        let presses = feed(&debouncer, edges(.stop, [(50, false)])) + debouncer.advance(to: ms(500))
        #expect(presses.isEmpty)
    }

    @Test func customTiming() {
        var debouncer = ButtonDebouncer(timing: ButtonTiming(debounce: .milliseconds(10), longPress: .milliseconds(500)))
        // With a 10 ms window, 0–15 ms is a real press (settled at 10 ms,
        // released at 15 ms, settled at 25 ms, reported when the 30 ms edge arrives).
        var presses = feed(&debouncer, edges(.stop, [(0, true), (15, false), (30, true)]))
        #expect(presses == [ButtonPress(button: .stop, kind: .short, at: ms(15))])
        presses = debouncer.advance(to: ms(529))
        #expect(presses.isEmpty)
        presses = debouncer.advance(to: ms(530))
        #expect(presses == [ButtonPress(button: .stop, kind: .long, at: ms(530))])
    }

    @Test func singleButtonLayoutMapsShortToSnoozeAndLongToStop() {
        let short = ButtonPress(button: .stop, kind: .short, at: 7)
        let long = ButtonPress(button: .stop, kind: .long, at: 9)
        #expect(ButtonLayout.singleButton.map(short) == ButtonPress(button: .snooze, kind: .short, at: 7))
        #expect(ButtonLayout.singleButton.map(long) == ButtonPress(button: .stop, kind: .long, at: 9))
        #expect(ButtonLayout.twoButtons.map(short) == short)
        #expect(ButtonLayout.twoButtons.map(ButtonPress(button: .snooze, kind: .long, at: 1))
                == ButtonPress(button: .snooze, kind: .long, at: 1))
    }
}
