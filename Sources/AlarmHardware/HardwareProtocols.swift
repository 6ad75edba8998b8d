/// One of the board's two buttons.
public enum Button: String, Sendable, Hashable, CaseIterable { case stop, snooze }

/// A raw edge from a button line, as the kernel reported it.
///
/// Bounce is not filtered here: a single physical press typically shows up as a burst of edges a
/// few milliseconds apart. ``ButtonDebouncer`` turns these into ``ButtonPress`` values.
public struct ButtonEdge: Sendable, Hashable {
    public var button: Button
    /// The logical level after the edge, with active-low already applied:
    /// `true` means the button is held down.
    public var pressed: Bool
    /// When the edge happened, in nanoseconds of `CLOCK_MONOTONIC`
    /// (the kernel's GPIO event timestamp), or of the simulation's clock.
    public var timestamp: UInt64

    public init(button: Button, pressed: Bool, timestamp: UInt64) {
        self.button = button
        self.pressed = pressed
        self.timestamp = timestamp
    }
}

/// A debounced, classified button press.
public struct ButtonPress: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// Released before the long-press threshold.
        case short
        /// Held until the long-press threshold; reported as soon as the
        /// threshold is reached, while the button is still held.
        case long
    }

    public var button: Button
    public var kind: Kind
    /// When the press was recognised, in the same time base as the edges' timestamps: the release
    /// for a short press, the press start plus the threshold for a long press.
    public var at: UInt64

    public init(button: Button, kind: Kind, at: UInt64) {
        self.button = button
        self.kind = kind
        self.at = at
    }
}

/// How the physical buttons map onto the daemon's stop and snooze actions.
public enum ButtonLayout: String, Sendable, Hashable {
    /// A stop button and a snooze button: presses pass through unchanged.
    case twoButtons
    /// One button (wired as `stop`): a short press means snooze, a long press means stop.
    case singleButton

    /// Maps a press on the physical buttons to the press the daemon acts on.
    public func map(_ press: ButtonPress) -> ButtonPress {
        guard self == .singleButton else { return press }
        return ButtonPress(button: press.kind == .short ? .snooze : .stop, kind: press.kind, at: press.at)
    }
}

/// An on/off output the daemon drives: the buzzer or the LED.
///
/// `on` is the logical state; an implementation applies active-low itself.
public protocol OutputLine: Sendable { func set(_ on: Bool) throws }

/// A source of raw button edges: real GPIO lines or the simulation.
public protocol ButtonEdgeSource: AsyncSequence, Sendable where Element == ButtonEdge {}
