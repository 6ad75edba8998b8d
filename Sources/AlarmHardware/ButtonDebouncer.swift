/// Debounce window and long-press threshold.
public struct ButtonTiming: Sendable, Hashable {
    /// A level change counts once the line has shown no edge for this long.
    public var debounce: Duration
    /// A press held this long is a long press.
    public var longPress: Duration

    public init(debounce: Duration = .milliseconds(30), longPress: Duration = .milliseconds(1500)) {
        self.debounce = debounce
        self.longPress = longPress
    }
}

/// Turns raw, bouncing edges into short and long presses. Pure: it never reads a clock; all time
/// comes from the edges' timestamps and from the instants passed to ``advance(to:)``.
///
/// Debouncing: a burst of edges counts as one level change once the line has been quiet for
/// ``ButtonTiming/debounce``. The change is dated at the burst's first edge, and only counts when
/// the level after the burst differs from the previous stable level, so a glitch (down and up again
/// within the window) is ignored.
///
/// Classification:
/// - a **long** press is reported as soon as the button has been held for
///   ``ButtonTiming/longPress``, while it is still held, without waiting for the
///   release (the release then reports nothing);
/// - a **short** press is reported on release, dated at the release.
///
/// Because deadlines pass without any edge (the line goes quiet; the threshold
/// is reached while held), the owner calls ``advance(to:)`` at
/// ``nextDeadline``; ``ButtonPressDetector`` does that on a clock.
public struct ButtonDebouncer: Sendable {
    public let timing: ButtonTiming
    private var states: [Button: LineState] = [:]

    private struct LineState: Sendable {
        /// The debounced level.
        var stable = false
        /// The level after the latest raw edge.
        var raw = false
        /// First and latest edge of the burst in progress, if any.
        var burstStart: UInt64?
        var lastEdge: UInt64 = 0
        /// When the current debounced press began.
        var pressStart: UInt64?
        var longReported = false

        func settleDeadline(_ window: UInt64) -> UInt64? { burstStart.map { _ in lastEdge &+ window } }

        /// The long-press deadline, suspended while a burst that began before
        /// it is unresolved (it may be the release).
        func longDeadline(_ threshold: UInt64) -> UInt64? {
            guard stable, !longReported, let pressStart else { return nil }
            let deadline = pressStart &+ threshold
            if let burstStart, burstStart <= deadline { return nil }
            return deadline
        }
    }

    public init(timing: ButtonTiming = ButtonTiming()) { self.timing = timing }

    private var window: UInt64 { Self.nanoseconds(timing.debounce) }
    private var threshold: UInt64 { Self.nanoseconds(timing.longPress) }

    /// The earliest instant (edge time base) at which ``advance(to:)`` has
    /// something to decide, or `nil` when nothing is pending.
    public var nextDeadline: UInt64? { earliestDeadline()?.1 }

    /// Feeds one raw edge. Deadlines up to the edge's timestamp are settled
    /// first, so presses come out in time order.
    public mutating func receive(_ edge: ButtonEdge) -> [ButtonPress] {
        let presses = advance(to: edge.timestamp)
        var state = states[edge.button, default: LineState()]
        if state.burstStart == nil { state.burstStart = edge.timestamp }
        state.raw = edge.pressed
        state.lastEdge = max(state.lastEdge, edge.timestamp)
        states[edge.button] = state
        // With a zero debounce window the edge settles at once.
        return presses + advance(to: edge.timestamp)
    }

    /// Settles every deadline at or before `now` (edge time base), in time order.
    public mutating func advance(to now: UInt64) -> [ButtonPress] {
        var presses: [ButtonPress] = []
        while let (button, deadline, isSettle) = earliestDeadline(), deadline <= now {
            var state = states[button]!
            if isSettle {
                settle(&state, button: button, into: &presses)
            } else {
                state.longReported = true
                presses.append(ButtonPress(button: button, kind: .long, at: deadline))
            }
            states[button] = state
        }
        return presses
    }

    private func earliestDeadline() -> (Button, UInt64, Bool)? {
        let deadlines = Button.allCases.flatMap { button -> [(Button, UInt64, Bool)?] in
            guard let state = states[button] else { return [] }
            return [state.settleDeadline(window).map { (button, $0, true) }, state.longDeadline(threshold).map { (button, $0, false) }]
        }
        return deadlines.compactMap { $0 }.min { $0.1 < $1.1 }
    }

    private func settle(_ state: inout LineState, button: Button, into presses: inout [ButtonPress]) {
        guard let changeAt = state.burstStart.take(), state.raw != state.stable else { return }
        state.stable = state.raw
        if state.stable {
            state.pressStart = changeAt
            state.longReported = false
            return
        }
        defer { state.pressStart = nil }
        guard let pressStart = state.pressStart, !state.longReported else { return }
        let kind: ButtonPress.Kind = changeAt &- pressStart >= threshold ? .long : .short
        presses.append(ButtonPress(button: button, kind: kind, at: kind == .long ? pressStart &+ threshold : changeAt))
    }

    /// `duration` in whole nanoseconds, 0 for a negative one: edge timestamps are unsigned.
    static func nanoseconds(_ duration: Duration) -> UInt64 { UInt64(max(0, duration.wholeNanoseconds)) }
}
