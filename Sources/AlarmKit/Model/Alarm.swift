import FoundationEssentials

/// An alarm as AlarmKit describes it: when it alerts, its countdowns, and its state.
public struct Alarm: Identifiable, Sendable, Hashable, Codable {
    public typealias ID = UUID

    public let id: UUID
    /// When the alarm alerts; `nil` for a timer.
    public var schedule: Schedule?
    /// The pre-alert countdown before the alert and the post-alert (snooze) countdown after it.
    public var countdownDuration: CountdownDuration?
    public var state: State

    public init(id: UUID, schedule: Schedule?, countdownDuration: CountdownDuration?, state: State) {
        self.id = id
        self.schedule = schedule
        self.countdownDuration = countdownDuration
        self.state = state
    }

    /// The state of an alarm, as AlarmKit names it.
    public enum State: String, Sendable, Hashable, Codable, CaseIterable { case scheduled, countdown, paused, alerting }

    /// The countdowns around an alert, in seconds.
    public struct CountdownDuration: Sendable, Hashable, Codable {
        /// The countdown before the alert (a timer's duration).
        @ExplicitNull public var preAlert: TimeInterval?
        /// The countdown after the alert when it is snoozed.
        @ExplicitNull public var postAlert: TimeInterval?

        public init(preAlert: TimeInterval?, postAlert: TimeInterval?) {
            self.preAlert = preAlert
            self.postAlert = postAlert
        }
    }

    /// When an alarm alerts: at a fixed instant, or at a local time of day.
    public enum Schedule: Sendable, Hashable, Codable {
        /// An absolute instant, unaffected by time zone changes.
        case fixed(Date)
        /// A wall-clock time in the node's time zone, once or weekly.
        case relative(Relative)

        /// A local time of day and how it repeats.
        public struct Relative: Sendable, Hashable, Codable {
            public var time: Time
            public var repeats: Recurrence

            public init(time: Time, repeats: Recurrence = .never) {
                self.time = time
                self.repeats = repeats
            }

            /// A local time of day.
            public struct Time: Sendable, Hashable, Codable {
                public var hour: Int
                public var minute: Int

                public init(hour: Int, minute: Int) {
                    self.hour = hour
                    self.minute = minute
                }

                /// Reads whole numbers; `7.5` is refused naming its field (decoding it as an
                /// `Int` throws an error that names none).
                public init(from decoder: any Decoder) throws {
                    let container = try decoder.container(keyedBy: CodingKeys.self)
                    func whole(_ key: CodingKeys) throws -> Int {
                        let number = try container.decode(Double.self, forKey: key)
                        guard let value = Int(exactly: number) else {
                            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "must be a whole number, not \(number)")
                        }
                        return value
                    }
                    self.init(hour: try whole(.hour), minute: try whole(.minute))
                }
            }

            /// How a relative schedule repeats.
            public enum Recurrence: Sendable, Hashable, Codable {
                /// Once, at the next occurrence of the time.
                case never
                /// On each of these weekdays.
                case weekly([Locale.Weekday])

                private enum CodingKeys: String, CodingKey { case weekly }

                public init(from decoder: any Decoder) throws {
                    if let word = try? decoder.singleValueContainer().decode(String.self) {
                        guard word == "never" else {
                            throw decoder.dataCorrupted(
                                "'\(word)' is not a recurrence: use \"never\" or {\"weekly\":[\"monday\",…]}")
                        }
                        self = .never
                        return
                    }
                    let container = try decoder.container(keyedBy: CodingKeys.self)
                    self = .weekly(try container.decode([WeekdayName].self, forKey: .weekly).map(\.weekday))
                }

                public func encode(to encoder: any Encoder) throws {
                    switch self {
                    case .never: try "never".encode(to: encoder)
                    case .weekly(let days):
                        var container = encoder.container(keyedBy: CodingKeys.self)
                        try container.encode(days.map(WeekdayName.init), forKey: .weekly)
                    }
                }
            }
        }

        private enum CodingKeys: String, CodingKey { case fixed, relative }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            switch (container.contains(.fixed), container.contains(.relative)) {
            case (true, false):
                self = .fixed(try container.decodeDate(forKey: .fixed))
            case (false, true):
                self = .relative(try container.decode(Relative.self, forKey: .relative))
            default:
                throw decoder.dataCorrupted("a schedule is {\"fixed\":\"<time>\"} or {\"relative\":{…}}, exactly one of them")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .fixed(let date): try container.encodeDate(date, forKey: .fixed)
            case .relative(let relative): try container.encode(relative, forKey: .relative)
            }
        }
    }
}

/// A weekday as docs/mqtt.md writes it: lowercase in full; three-letter forms are read too.
struct WeekdayName: Codable, Sendable {
    var weekday: Locale.Weekday

    init(_ weekday: Locale.Weekday) { self.weekday = weekday }

    static let fullNames: [(String, Locale.Weekday)] = [
        ("sunday", .sunday), ("monday", .monday), ("tuesday", .tuesday), ("wednesday", .wednesday),
        ("thursday", .thursday), ("friday", .friday), ("saturday", .saturday),
    ]

    /// Reads "monday", "Monday" or "mon".
    static func parse(_ text: String) -> Locale.Weekday? {
        let word = text.lowercased()
        return fullNames.first { $0.0 == word || (word.count == 3 && $0.0.hasPrefix(word)) }?.1
    }

    static func fullName(of weekday: Locale.Weekday) -> String { fullNames.first { $0.1 == weekday }!.0 }

    init(from decoder: any Decoder) throws {
        weekday = try decoder.decodeString(Self.parse) { "'\($0)' is not a weekday: use monday…sunday or mon…sun" }
    }

    func encode(to encoder: any Encoder) throws { try Self.fullName(of: weekday).encode(to: encoder) }
}

extension Locale.Weekday {
    /// The weekday's index, Sunday = 0, as in the proleptic Gregorian calendar.
    var indexFromSunday: Int { WeekdayName.fullNames.firstIndex { $0.1 == self }! }
}
