/// An output that is on or off as a pure function of the time since it started:
/// a buzzer pattern or an LED mode. A driver asks for the level now and for the
/// next change, and sleeps exactly until then; nothing polls.
public protocol OnOffSignal: Sendable {
    /// The level `elapsed` after the start, and how long until it next changes
    /// (`nil`: it never changes again). `elapsed` is never negative.
    func level(after elapsed: Duration) -> (isOn: Bool, changesIn: Duration?)
}

/// The level of an ``OnOffSignal`` at an instant, and when it next changes.
public struct SignalLevel<Instant: InstantProtocol>: Sendable, Hashable where Instant.Duration == Duration {
    public var isOn: Bool
    /// The first instant after `now` at which the level differs, or `nil`.
    public var nextChange: Instant?
}

extension OnOffSignal {
    /// Given the instant the signal started and now: is it on, and when does it
    /// next change? Before `start` the signal is off.
    public func level<I: InstantProtocol>(startedAt start: I, at now: I) -> SignalLevel<I> where I.Duration == Duration {
        guard now >= start else { return SignalLevel(isOn: false, nextChange: start) }
        let (isOn, changesIn) = level(after: start.duration(to: now))
        return SignalLevel(isOn: isOn, nextChange: changesIn.map { now.advanced(by: $0) })
    }
}

/// A repeating on/off pattern for an active buzzer.
public struct BuzzerPattern: OnOffSignal, Hashable {
    public struct Step: Sendable, Hashable {
        public var isOn: Bool
        public var duration: Duration

        public static func on(_ milliseconds: Int) -> Step { Step(isOn: true, duration: .milliseconds(milliseconds)) }
        public static func off(_ milliseconds: Int) -> Step { Step(isOn: false, duration: .milliseconds(milliseconds)) }
    }

    /// One cycle; it repeats from the start. Steps that are not positive are dropped.
    public let steps: [Step]
    private let period: Duration

    public init(_ steps: [Step]) {
        self.steps = steps.filter { $0.duration > .zero }
        self.period = self.steps.reduce(.zero) { $0 + $1.duration }
    }

    /// Three beeps, a pause. The pattern of `.default` sounds and of unknown names.
    public static let standard = BuzzerPattern([.on(100), .off(100), .on(100), .off(100), .on(100), .off(700)])
    /// A short beep every two seconds.
    public static let gentle = BuzzerPattern([.on(150), .off(1850)])
    /// Fast beeping.
    public static let urgent = BuzzerPattern([.on(100), .off(100)])
    /// Nearly continuous.
    public static let siren = BuzzerPattern([.on(450), .off(50)])
    /// Two short chirps every two seconds: the authorization prompt.
    public static let chirp = BuzzerPattern([.on(40), .off(80), .on(40), .off(1840)])

    /// The pattern for a sound name (case-insensitive). Known names: `default`,
    /// `gentle`, `urgent`, `siren`, `chirp`; any other name plays `default`.
    public static func named(_ name: String) -> BuzzerPattern {
        ["gentle": .gentle, "urgent": .urgent, "siren": .siren, "chirp": .chirp][name.lowercased()] ?? .standard
    }

    /// The denser pattern a sound moves to when it escalates, or `nil` when it does not escalate.
    public var escalated: BuzzerPattern? { [Self.gentle: Self.standard, .standard: .urgent, .urgent: .siren][self] }

    public func level(after elapsed: Duration) -> (isOn: Bool, changesIn: Duration?) {
        guard period > .zero else { return (false, nil) }
        let phase = Duration.nanoseconds(elapsed.wholeNanoseconds % period.wholeNanoseconds)
        var start = Duration.zero
        var index = 0
        while start + steps[index].duration <= phase {
            start += steps[index].duration
            index += 1
        }
        let isOn = steps[index].isOn
        var changesIn = start + steps[index].duration - phase
        // Walk on through steps of the same level, for at most one cycle.
        for offset in 1..<steps.count + 1 {
            let step = steps[(index + offset) % steps.count]
            if step.isOn != isOn { return (isOn, changesIn) }
            changesIn += step.duration
        }
        return (isOn, nil)
    }
}

/// What the buzzer plays for one alert: a sound's pattern, then its denser
/// escalated pattern once the alert has gone on for `escalateAfter`.
public struct BuzzerSound: OnOffSignal, Hashable {
    public var pattern: BuzzerPattern
    public var escalated: BuzzerPattern?
    public var escalateAfter: Duration

    public func level(after elapsed: Duration) -> (isOn: Bool, changesIn: Duration?) {
        guard let escalated else { return pattern.level(after: elapsed) }
        if elapsed >= escalateAfter { return escalated.level(after: elapsed - escalateAfter) }
        let before = pattern.level(after: elapsed)
        let untilEscalation = escalateAfter - elapsed
        if let changesIn = before.changesIn, changesIn < untilEscalation { return before }
        let after = escalated.level(after: .zero)
        if after.isOn != before.isOn { return (before.isOn, untilEscalation) }
        return (before.isOn, after.changesIn.map { untilEscalation + $0 })
    }
}

extension BuzzerSound {
    /// The sound for a name (see ``BuzzerPattern/named(_:)``), escalating after
    /// `escalateAfter`, or never when it is `nil`.
    public init(named name: String, escalateAfter: Duration?) {
        let pattern = BuzzerPattern.named(name)
        self.init(pattern: pattern, escalated: escalateAfter == nil ? nil : pattern.escalated,
                  escalateAfter: escalateAfter ?? .zero)
    }
}

/// The LED's modes.
public enum LEDMode: String, OnOffSignal, Hashable {
    case off
    case on
    /// 1 Hz: while a countdown runs.
    case slowBlink
    /// 5 Hz: during an authorization prompt.
    case fastBlink

    public func level(after elapsed: Duration) -> (isOn: Bool, changesIn: Duration?) {
        switch self {
        case .off: return (false, nil)
        case .on: return (true, nil)
        case .slowBlink: return BuzzerPattern([.on(500), .off(500)]).level(after: elapsed)
        case .fastBlink: return BuzzerPattern([.on(100), .off(100)]).level(after: elapsed)
        }
    }
}
