import AlarmKit
import FoundationEssentials
import Mosquitto

/// Everything alarmd is configured with. Every field has a default (`docs/configuration.md`).
public struct NodeConfiguration: Sendable, Hashable {
    public struct Node: Sendable, Hashable {
        /// `[A-Za-z0-9_-]`; default: the host name.
        public var id: String = NodeTopics.nodeID(fromHostName: ProcessInfo.processInfo.hostName)
        public var topicPrefix: String = "alarmd"
        public var stateDirectory: String = "/var/lib/alarmd"
        /// An IANA zone; nil means the system's zone, followed as it changes.
        public var timeZone: String?
        public var authorization: AuthorizationMode = .authorized
        /// Groups the node belongs to (`[A-Za-z0-9_-]`, as node ids): it also takes commands on
        /// `<prefix>/groups/<group>/cmd/<operation>`.
        public var groups: [String] = []
    }

    public enum AuthorizationMode: String, Sendable, Hashable, CaseIterable {
        /// Remote scheduling is allowed from the start.
        case authorized
        /// The node starts `notDetermined` and asks on its hardware.
        case prompt
    }

    public struct Broker: Sendable, Hashable {
        public var host: String = "localhost"
        public var port: Int = 1883
        public var username: String?
        public var password: String?
        /// A file holding the password (first line), so it stays out of the config file.
        public var passwordFile: String?
        public var tls: Bool = false
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        /// Skips the broker certificate's host name check. For testing only.
        public var tlsInsecure: Bool = false
        /// Seconds between keepalive pings; a dead connection is noticed after about twice this.
        public var keepAlive: Int = 15
        /// Default: `alarmd-<node id>`.
        public var clientID: String?
        /// `auto` (MQTT 5, falling back to 3.1.1), `5` or `3.1.1`.
        public var protocolSetting: MQTTProtocolSetting = .auto
        /// Messages kept while the broker is unreachable (retained state: latest per topic).
        public var outgoingBufferLimit: Int = 1000
    }

    public struct Limits: Sendable, Hashable {
        /// What `max-alarms` may be, in the file and on the command line.
        public static let maxAlarmsRange = 1...100_000
        public var maxAlarms: Int = 100
        /// Seconds an alarm alerts with nobody acting before it is silenced.
        public var alertTimeout: TimeInterval = 600
        public var silenceAction: EngineConfiguration.SilenceAction = .stop
        /// Seconds an alert may be late (after downtime or a clock step) and still sound.
        public var missedAlarmGrace: TimeInterval = 900
    }

    public struct Hardware: Sendable, Hashable {
        public enum Mode: String, Sendable, Hashable, CaseIterable {
            /// GPIO; the simulation only on a machine with no GPIO chip at all.
            case auto
            /// GPIO; a missing chip is an error.
            case gpio
            /// The simulation, with the virtual hardware on MQTT.
            case simulated
        }

        public struct Line: Sendable, Hashable {
            /// An offset (`"17"`) or a line name (`"GPIO17"`).
            public var line: String
            public var activeLow: Bool = false
            /// `pull-up`, `pull-down`, `disabled` or `as-is`.
            public var bias: String = "as-is"
        }

        public var mode: Mode = .auto
        /// A chip by name (`gpiochip0`), path (`/dev/gpiochip4`) or label (`pinctrl-rp1`).
        public var chip: String = "gpiochip0"
        public var buzzer: Line? = Line(line: "18")
        public var led: Line? = Line(line: "23")
        public var stopButton: Line? = Line(line: "17", activeLow: true, bias: "pull-up")
        public var snoozeButton: Line? = Line(line: "27", activeLow: true, bias: "pull-up")
        /// Seconds.
        public var debounce: TimeInterval = 0.030
        public var longPress: TimeInterval = 1.5
        /// Why every press would be long (a shorter one is taken for a glitch); a warning, not a
        /// refusal: such a file ran before, and a node that does not start rings nothing.
        public var timingProblem: String? {
            guard debounce >= longPress else { return nil }
            return "hardware.debounce (\(debounce) s) is not shorter than hardware.long-press (\(longPress) s): a press shorter than "
                + "the debounce window is ignored, so every press is long; a few hundredths of a second is enough"
        }

        /// Each part's key in the file and where its line is kept, in the file's order.
        static var partKeys: [(key: String, path: WritableKeyPath<Hardware, Line?>)] {
            [("buzzer", \.buzzer), ("led", \.led), ("stop-button", \.stopButton), ("snooze-button", \.snoozeButton)]
        }
        /// The configured parts by their keys in the file, in the file's order.
        public var parts: [(key: String, line: Line)] { Self.partKeys.compactMap { key, path in self[keyPath: path].map { (key, $0) } } }
        /// Seconds of alerting before the buzzer pattern gets denser.
        public var escalateAfter: TimeInterval = 60
        /// Seconds the authorization prompt waits for a button.
        public var promptDuration: TimeInterval = 30
    }

    public struct HomeAssistant: Sendable, Hashable {
        /// Announce the node to Home Assistant by MQTT discovery.
        public var discovery: Bool = true
        public var prefix: String = "homeassistant"
    }

    public struct Intents: Sendable, Hashable {
        /// MQTT topic filters where intents may publish besides `<base>/intents/#` (``IntentTopics``).
        public var allow: [String] = []
    }

    public var node = Node()
    public var intents = Intents()
    public var homeAssistant = HomeAssistant()
    public var broker = Broker()
    public var limits = Limits()
    public var hardware = Hardware()

    public init() {}

    /// The engine's part of the configuration, with the zone resolved.
    public func engineConfiguration(timeZone: TimeZone) -> EngineConfiguration {
        EngineConfiguration(maximumAlarms: limits.maxAlarms, alertTimeout: limits.alertTimeout,
                            silenceAction: limits.silenceAction, missedAlarmGrace: limits.missedAlarmGrace,
                            timeZone: timeZone, intentTopics: intentTopics)
    }

    /// Where this node's intents may publish.
    public var intentTopics: IntentTopics { IntentTopics(prefix: node.topicPrefix, node: node.id, allowed: intents.allow) }

    public var topics: NodeTopics { NodeTopics(prefix: node.topicPrefix, node: node.id) }

    /// Each setting alarmd's command-line flags give this configuration otherwise than `file` does, with the two values and the flag.
    public func overrides(of file: NodeConfiguration) -> [String] {
        let settings: [(key: String, flag: String, file: String, inForce: String)] = [
            ("node.id", "--node", file.node.id, node.id),
            ("node.groups", "--group", file.node.groups.description, node.groups.description),
            ("node.state-directory", "--state-dir", file.node.stateDirectory, node.stateDirectory),
            ("node.time-zone", "--time-zone", file.node.timeZone ?? "the system's", node.timeZone ?? "the system's"),
            ("broker.host and broker.port", "--broker", "\(file.broker.host):\(file.broker.port)", "\(broker.host):\(broker.port)"),
            ("broker.protocol", "--broker-protocol", file.broker.protocolSetting.rawValue, broker.protocolSetting.rawValue),
            ("limits.max-alarms", "--max-alarms", "\(file.limits.maxAlarms)", "\(limits.maxAlarms)"),
            ("hardware.mode", "--simulate-hardware", file.hardware.mode.rawValue, hardware.mode.rawValue),
        ]
        return settings.filter { $0.file != $0.inForce }.map { "\($0.key): \($0.file) from the file or default, \($0.inForce) by \($0.flag)" }
    }
}

extension NodeConfiguration {
    /// Why `zone` cannot be used, for an error message: an offset, not an IANA zone, or, when this
    /// system's zone database has it, an alarmd built without named-zone support (see
    /// `namedTimeZoneSupport` in AlarmKit).
    public static func unusableTimeZoneReason(_ zone: String) -> String {
        if let seconds = TimeZone(identifier: zone)?.secondsFromGMT() {
            let fixed = seconds % 3600 == 0 ? ", or Etc/GMT\(seconds > 0 ? "-" : "+")\(abs(seconds / 3600)) for a fixed offset (POSIX's sign, the opposite)" : ""
            return "'\(zone)' is an offset\(yearRoundOffsets[zone] == nil ? ", not an IANA time zone" : " all year, without daylight saving"): use your zone, such as \(yearRoundOffsets[zone] ?? "Europe/Berlin")\(fixed)"
        }
        if !zone.isEmpty, !zone.contains(".."), FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/" + zone) {
            return "'\(zone)' is in /usr/share/zoneinfo but this alarmd cannot read named time zones (a static build without FoundationInternationalization): rebuild it from this repository's sources, which keep that module linked"
        }
        return "'\(zone)' is not an IANA time zone such as Europe/Berlin"
    }
}
