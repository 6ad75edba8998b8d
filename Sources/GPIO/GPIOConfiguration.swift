/// Which GPIO chip to open.
public enum GPIOChipSelector: Sendable, Hashable, CustomStringConvertible {
    /// The kernel's name, e.g. `gpiochip0` (opened as `/dev/<name>`).
    case name(String)
    /// A device path, e.g. `/dev/gpiochip4`.
    case path(String)
    /// The chip's label, e.g. `pinctrl-rp1` on a Raspberry Pi 5 or `pinctrl-bcm2835` on earlier
    /// models: stable across boots, unlike the number in its name.
    case label(String)

    /// Reads a configuration string: a path when it starts with `/`, a name
    /// when it looks like `gpiochipN`, otherwise a label.
    public init(_ text: String) {
        if text.hasPrefix("/") {
            self = .path(text)
        } else if text.hasPrefix("gpiochip"), !text.dropFirst(8).isEmpty,
                  text.dropFirst(8).allSatisfy({ $0.isASCII && $0.isNumber }) {
            self = .name(text)
        } else {
            self = .label(text)
        }
    }

    /// The name, path or label as written.
    var text: String { switch self { case .name(let text), .path(let text), .label(let text): text } }

    public var description: String {
        switch self {
        case .name(let name): return "'\(name)'"
        case .path(let path): return "at '\(path)'"
        case .label(let label): return "labelled '\(label)'"
        }
    }
}

/// Which line of a chip to use.
public enum GPIOLineSelector: Sendable, Hashable, CustomStringConvertible {
    /// The line's offset on its chip (on a Raspberry Pi's main chip, the BCM GPIO number).
    case offset(UInt32)
    /// The line's name as the device tree sets it, e.g. `GPIO17`. The first
    /// line with that name is used.
    case name(String)

    /// Reads a configuration string: an offset when it is all digits, otherwise a line name.
    public init(_ text: String) { self = UInt32(text).map(Self.offset) ?? .name(text) }

    public var description: String {
        switch self {
        case .offset(let offset): return "line \(offset)"
        case .name(let name): return "line '\(name)'"
        }
    }
}

/// The pull resistor to request for a line (Linux 5.5 or later). The raw values are the words
/// of alarmd's configuration (`bias = "pull-up"`).
public enum GPIOBias: String, Sendable, Hashable {
    /// Leave the line's bias as it is.
    case asIs = "as-is"
    /// No pull resistor.
    case disabled
    case pullUp = "pull-up"
    case pullDown = "pull-down"
}

/// One line and how to request it.
public struct GPIOLineConfiguration: Sendable, Hashable {
    public var line: GPIOLineSelector
    /// The line is active (on, pressed) when its physical level is low, as for
    /// a button wired to ground with a pull-up.
    public var activeLow: Bool
    public var bias: GPIOBias

    public init(_ line: GPIOLineSelector, activeLow: Bool = false, bias: GPIOBias = .asIs) {
        self.line = line
        self.activeLow = activeLow
        self.bias = bias
    }

    /// The settings as messages name them: `active-low, pull-up` or `default settings`.
    public var settingsDescription: String {
        let parts = (activeLow ? ["active-low"] : []) + (bias == .asIs ? [] : [bias == .disabled ? "bias disabled" : bias.rawValue])
        return parts.isEmpty ? "default settings" : parts.joined(separator: ", ")
    }
}
