import Testing
@testable import AlarmHardware

private func level(_ signal: some OnOffSignal, _ milliseconds: Int) -> (Bool, Duration?) {
    let result = signal.level(after: .milliseconds(milliseconds))
    return (result.isOn, result.changesIn)
}

@Suite struct SignalTests {
    @Test func soundNamesMapToPatternsAndUnknownNamesFallBackToDefault() {
        #expect(BuzzerPattern.named("default") == .standard)
        #expect(BuzzerPattern.named("gentle") == .gentle)
        #expect(BuzzerPattern.named("URGENT") == .urgent)
        #expect(BuzzerPattern.named("chirp") == .chirp)
        #expect(BuzzerPattern.named("siren") == .siren)
        #expect(BuzzerPattern.named("no-such-sound") == .standard)
        #expect(BuzzerPattern.named("") == .standard)
    }

    @Test func patternLevelAndNextChangeWithinAndAcrossCycles() {
        // standard: on 100, off 100, on 100, off 100, on 100, off 700 (1.2 s).
        let pattern = BuzzerPattern.standard
        #expect(level(pattern, 0) == (true, .milliseconds(100)))
        #expect(level(pattern, 99) == (true, .milliseconds(1)))
        #expect(level(pattern, 100) == (false, .milliseconds(100)), "a boundary belongs to the next step")
        #expect(level(pattern, 450) == (true, .milliseconds(50)))
        #expect(level(pattern, 500) == (false, .milliseconds(700)))
        #expect(level(pattern, 1199) == (false, .milliseconds(1)))
        #expect(level(pattern, 1200) == (true, .milliseconds(100)), "the cycle repeats")
        #expect(level(pattern, 12 * 3600 * 1000 + 250) == (true, .milliseconds(50)))
    }

    @Test func adjacentStepsOfTheSameLevelMergeIncludingAcrossTheCycleEnd() {
        let pattern = BuzzerPattern([.on(100), .on(50), .off(200), .on(30)])
        #expect(level(pattern, 0) == (true, .milliseconds(150)))
        #expect(level(pattern, 120) == (true, .milliseconds(30)))
        #expect(level(pattern, 350) == (true, .milliseconds(180)), "the last step runs on into the first two")
    }

    @Test func constantAndEmptyPatternsNeverChange() {
        #expect(level(BuzzerPattern([.on(100), .on(200)]), 5_000) == (true, nil))
        #expect(level(BuzzerPattern([]), 5_000) == (false, nil))
        #expect(level(BuzzerPattern([.on(0), .off(-5)]), 5) == (false, nil))
    }

    @Test func escalationSwitchesToTheDenserPatternAtItsTime() {
        // gentle (on 150, off 1850) escalates to standard after 3 s.
        let sound = BuzzerSound(named: "gentle", escalateAfter: .seconds(3))
        #expect(sound.escalated == .standard)
        #expect(level(sound, 0) == (true, .milliseconds(150)))
        #expect(level(sound, 2000) == (true, .milliseconds(150)))
        #expect(level(sound, 2150) == (false, .milliseconds(850)), "gentle would stay off until 4 s; escalation at 3 s")
        #expect(level(sound, 3000) == (true, .milliseconds(100)))
        #expect(level(sound, 3100) == (false, .milliseconds(100)))
    }

    @Test func escalationBoundaryWithoutALevelChangeIsSkipped() {
        // Off at the escalation instant in both patterns: the next change is the escalated pattern's.
        let sound = BuzzerSound(pattern: BuzzerPattern([.on(100), .off(900)]),
                                escalated: BuzzerPattern([.off(50), .on(50)]), escalateAfter: .milliseconds(1000))
        #expect(level(sound, 200) == (false, .milliseconds(850)))
    }

    @Test func noEscalationWhenDisabledOrForChirp() {
        let never = BuzzerSound(named: "default", escalateAfter: nil)
        #expect(level(never, 3_600_000) == level(BuzzerPattern.standard, 3_600_000))
        #expect(BuzzerPattern.chirp.escalated == nil)
        let chirp = BuzzerSound(named: "chirp", escalateAfter: .seconds(1))
        #expect(level(chirp, 10_000) == level(BuzzerPattern.chirp, 10_000))
    }

    @Test func ledModes() {
        #expect(level(LEDMode.off, 1234) == (false, nil))
        #expect(level(LEDMode.on, 1234) == (true, nil))
        #expect(level(LEDMode.slowBlink, 0) == (true, .milliseconds(500)))
        #expect(level(LEDMode.slowBlink, 700) == (false, .milliseconds(300)))
        #expect(level(LEDMode.fastBlink, 0) == (true, .milliseconds(100)))
        #expect(level(LEDMode.fastBlink, 150) == (false, .milliseconds(50)))
    }

    @Test func levelAtInstantsGivesTheNextChangeAsAnInstant() {
        let start = ManualClock.Instant.ms(1000)
        #expect(LEDMode.slowBlink.level(startedAt: start, at: .ms(1700))
                == SignalLevel(isOn: false, nextChange: .ms(2000)))
        #expect(BuzzerPattern.urgent.level(startedAt: start, at: .ms(1000))
                == SignalLevel(isOn: true, nextChange: .ms(1100)))
        #expect(LEDMode.on.level(startedAt: start, at: .ms(5000)) == SignalLevel(isOn: true, nextChange: nil))
        #expect(BuzzerPattern.urgent.level(startedAt: start, at: .ms(400))
                == SignalLevel(isOn: false, nextChange: start), "off before it starts")
    }
}
