import FoundationEssentials

/// Data an app attaches to its alarms (AlarmKit's `AlarmMetadata`).
public protocol AlarmMetadata: Codable, Hashable, Sendable {}

/// An sRGB colour, standing in for SwiftUI's `Color`. Written as `"#RRGGBB"`.
public struct Color: Sendable, Hashable, Codable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// Reads `"#RRGGBB"` (the `#` is optional, any case); `nil` for anything else.
    public init?(hex: String) {
        var digits = Substring(hex)
        if digits.hasPrefix("#") { digits = digits.dropFirst() }
        guard digits.count == 6, digits.allSatisfy(\.isHexDigit), let value = UInt32(digits, radix: 16) else { return nil }
        self.init(red: UInt8(value >> 16), green: UInt8((value >> 8) & 0xFF), blue: UInt8(value & 0xFF))
    }

    /// `"#RRGGBB"`, uppercase.
    public var hex: String { "#" + [red, green, blue].map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined() }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        self = try decoder.decodeString(Color.init(hex:)) { "'\($0)' is not a colour: use \"#RRGGBB\"" }
    }

    public func encode(to encoder: any Encoder) throws { try hex.encode(to: encoder) }

    // The system colours of Apple's platforms (light appearance), so `.green` ports as is.
    public static let black = Color(red: 0x00, green: 0x00, blue: 0x00)
    public static let white = Color(red: 0xFF, green: 0xFF, blue: 0xFF)
    public static let gray = Color(red: 0x8E, green: 0x8E, blue: 0x93)
    public static let red = Color(red: 0xFF, green: 0x3B, blue: 0x30)
    public static let orange = Color(red: 0xFF, green: 0x95, blue: 0x00)
    public static let yellow = Color(red: 0xFF, green: 0xCC, blue: 0x00)
    public static let green = Color(red: 0x34, green: 0xC7, blue: 0x59)
    public static let mint = Color(red: 0x00, green: 0xC7, blue: 0xBE)
    public static let teal = Color(red: 0x30, green: 0xB0, blue: 0xC7)
    public static let cyan = Color(red: 0x32, green: 0xAD, blue: 0xE6)
    public static let blue = Color(red: 0x00, green: 0x7A, blue: 0xFF)
    public static let indigo = Color(red: 0x58, green: 0x56, blue: 0xD6)
    public static let purple = Color(red: 0xAF, green: 0x52, blue: 0xDE)
    public static let pink = Color(red: 0xFF, green: 0x2D, blue: 0x55)
    public static let brown = Color(red: 0xA2, green: 0x84, blue: 0x5E)
    /// The default tint, as on Apple's platforms.
    public static let accentColor = blue
}

/// A button on an alarm's alert or countdown (AlarmKit's `AlarmButton`).
public struct AlarmButton: Sendable, Hashable, Codable {
    public var text: String
    public var textColor: Color
    public var systemImageName: String

    public init(text: String, textColor: Color, systemImageName: String) {
        self.text = text
        self.textColor = textColor
        self.systemImageName = systemImageName
    }
}

/// What a device shows for an alarm in each of its states (AlarmKit's `AlarmPresentation`).
public struct AlarmPresentation: Sendable, Hashable, Codable {
    public var alert: Alert
    @ExplicitNull public var countdown: Countdown?
    @ExplicitNull public var paused: Paused?

    public init(alert: Alert, countdown: Countdown? = nil, paused: Paused? = nil) {
        self.alert = alert
        self.countdown = countdown
        self.paused = paused
    }

    /// The alerting presentation.
    public struct Alert: Sendable, Hashable, Codable {
        public var title: String
        /// The stop button; ``defaultStopButton`` unless the app chose its own.
        public var stopButton: AlarmButton
        @ExplicitNull public var secondaryButton: AlarmButton?
        @ExplicitNull public var secondaryButtonBehavior: SecondaryButtonBehavior?

        /// The stop button a node shows when the app gives none, as iOS 26.1 provides its own
        /// stop control: "Stop" in white, with the `stop.circle` symbol.
        public static let defaultStopButton = AlarmButton(text: "Stop", textColor: .white, systemImageName: "stop.circle")

        /// An alert with the node's stop button (``defaultStopButton``) and, optionally, a
        /// secondary button, as AlarmKit's initializer of iOS 26.1.
        public init(title: String, secondaryButton: AlarmButton? = nil, secondaryButtonBehavior: SecondaryButtonBehavior? = nil) {
            self.title = title
            self.stopButton = Self.defaultStopButton
            self.secondaryButton = secondaryButton
            self.secondaryButtonBehavior = secondaryButtonBehavior
        }

        /// An alert with the app's own stop button, as AlarmKit's initializer of iOS 26.0.
        @available(*, deprecated, message: "the node provides the stop button, as iOS 26.1 does: use init(title:secondaryButton:secondaryButtonBehavior:)")
        public init(
            title: String, stopButton: AlarmButton,
            secondaryButton: AlarmButton? = nil, secondaryButtonBehavior: SecondaryButtonBehavior? = nil
        ) {
            self.init(title: title, secondaryButton: secondaryButton, secondaryButtonBehavior: secondaryButtonBehavior)
            self.stopButton = stopButton
        }

        /// What the secondary button does: snooze/repeat (`countdown`) or the app's own intent (`custom`).
        public enum SecondaryButtonBehavior: String, Sendable, Hashable, Codable {
            case countdown, custom

            public init(from decoder: any Decoder) throws {
                self = try decoder.decodeString(Self.init) { "'\($0)' is not a behavior: use \"countdown\" or \"custom\"" }
            }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            title = try container.decode(String.self, forKey: .title)
            stopButton = try container.decodeOptional(AlarmButton.self, forKey: .stopButton) ?? Self.defaultStopButton
            secondaryButton = try container.decodeOptional(AlarmButton.self, forKey: .secondaryButton)
            secondaryButtonBehavior = try container.decodeOptional(
                SecondaryButtonBehavior.self, forKey: .secondaryButtonBehavior)
        }
    }

    /// The presentation while a countdown runs.
    public struct Countdown: Sendable, Hashable, Codable {
        public var title: String
        @ExplicitNull public var pauseButton: AlarmButton?

        public init(title: String, pauseButton: AlarmButton? = nil) {
            self.title = title
            self.pauseButton = pauseButton
        }
    }

    /// The presentation while a countdown is paused.
    public struct Paused: Sendable, Hashable, Codable {
        public var title: String
        public var resumeButton: AlarmButton

        public init(title: String, resumeButton: AlarmButton) {
            self.title = title
            self.resumeButton = resumeButton
        }
    }
}

/// How an alarm looks, plus the app's data (AlarmKit's `AlarmAttributes`).
public struct AlarmAttributes<Metadata: AlarmMetadata>: Sendable, Hashable, Codable {
    public var presentation: AlarmPresentation
    @ExplicitNull public var metadata: Metadata?
    public var tintColor: Color

    public init(presentation: AlarmPresentation, metadata: Metadata? = nil, tintColor: Color) {
        self.presentation = presentation
        self.metadata = metadata
        self.tintColor = tintColor
    }
}

extension AlarmAttributes {
    /// The type of a Live Activity's `context.state` for these attributes, as in AlarmKit
    /// (where `AlarmAttributes` is ActivityKit's `ActivityAttributes`).
    public typealias ContentState = AlarmPresentationState
}
