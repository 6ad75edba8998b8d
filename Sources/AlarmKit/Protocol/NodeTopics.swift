import FoundationEssentials

/// The MQTT topics of one node (docs/mqtt.md), all under `<prefix>/<node>`.
public struct NodeTopics: Sendable, Hashable {
    /// `<prefix>/<node>`.
    public let base: String

    public init(prefix: String = "alarmd", node: String) { base = prefix.isEmpty ? node : "\(prefix)/\(node)" }

    /// The topics of a group, under `<prefix>/groups/<group>`: every member takes the commands
    /// published on its `cmd/<operation>` (``commandsFilter``, ``command(_:)``).
    public static func group(_ group: String, prefix: String = "alarmd") -> NodeTopics {
        NodeTopics(prefix: prefix.isEmpty ? "groups" : "\(prefix)/groups", node: group)
    }

    /// Every node's retained status under `prefix`: `<prefix>/+/status`.
    public static func statusFilter(prefix: String = "alarmd") -> String { prefix.isEmpty ? "+/status" : "\(prefix)/+/status" }

    /// The node id of a status topic under `prefix` (`<prefix>/<node>/status`), if `topic` is one.
    public static func nodeID(inStatusTopic topic: String, prefix: String = "alarmd") -> String? {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard levels.last == "status", levels.count >= 2 else { return nil }
        let node = String(levels[levels.count - 2])
        return levels.dropLast(2).joined(separator: "/") == prefix && isValidNodeID(node) ? node : nil
    }

    /// True for an MQTT topic name a node may publish to: 1 to `maxBytes` UTF-8 bytes, without
    /// the wildcards `+` and `#` or U+0000 (MQTT 3.1.1, 4.7.3).
    public static func isTopicName(_ topic: String, maxBytes: Int = 65_535) -> Bool {
        !topic.isEmpty && topic.utf8.count <= maxBytes && !topic.contains { "+#\u{0}".contains($0) }
    }

    /// True for a topic prefix (`node.topic-prefix`, `--prefix`): without `+`, `#` or U+0000,
    /// and not ending with `/`.
    public static func isValidPrefix(_ prefix: String) -> Bool {
        !prefix.contains { "+#\u{0}".contains($0) } && !prefix.hasSuffix("/")
    }

    /// Retained node status; the will and a clean shutdown write `{"state":"offline"}` here.
    public var status: String { "\(base)/status" }
    /// Retained alarm documents, one topic per alarm.
    public var alarmsFilter: String { "\(base)/alarms/+" }
    public func alarm(_ id: UUID) -> String { "\(base)/alarms/\(id.uuidString)" }
    /// Events, not retained.
    public var events: String { "\(base)/events" }
    /// Commands: `<base>/cmd/<operation>`.
    public var commandsFilter: String { "\(base)/cmd/+" }
    public func command(_ operation: NodeCommand.Operation) -> String { "\(base)/cmd/\(operation.rawValue)" }
    /// Simulation mode: presses in, outputs out (retained).
    public var simulatedPress: String { "\(base)/sim/press" }
    public var simulatedOutputs: String { "\(base)/sim/outputs" }
    public var simulatedButtons: String { "\(base)/sim/buttons" }

    /// The alarm id of an alarm topic, if `topic` is one.
    public func alarmID(inTopic topic: String) -> UUID? {
        name(inTopic: topic, section: "alarms").flatMap { UUID(uuidString: String($0)) }
    }

    /// The operation named by a command topic, as written (it may not be a known operation).
    public func operationName(inTopic topic: String) -> String? { name(inTopic: topic, section: "cmd").map(String.init) }

    /// What follows `<base>/<section>/` in `topic`, or nil. Compared byte for byte, as MQTT
    /// compares topics (and without building the prefix: this runs for every message received).
    private func name(inTopic topic: String, section: String) -> Substring? {
        (topic.utf8[...].removingPrefix(base.utf8)?.removingPrefix("/".utf8)?
            .removingPrefix(section.utf8)?.removingPrefix("/".utf8)).map(Substring.init)
    }

    /// True when `id` is a valid node id: letters, digits, `_` and `-`.
    public static func isValidNodeID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
        }
    }

    /// A node id made from a host name: characters outside `[A-Za-z0-9_-]` become `-`.
    public static func nodeID(fromHostName host: String) -> String {
        let cleaned = String(host.split(separator: ".").first ?? "node").map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "-") ? character : "-"
        }
        let id = String(cleaned.prefix(64))
        return id.isEmpty ? "node" : id
    }
}

/// alarmd's version (its tools and AlarmKit share it), published in the node status.
public enum AlarmdVersion { public static let current = "0.1.0" }

/// The node's retained status document.
public struct NodeStatus: Sendable, Hashable, Codable {
    public var state: String
    public var version: String?
    @OptionalInstant public var since: Date?
    public var timeZone: String?
    public var clockSynchronized: Bool?
    public var authorization: AlarmManager.AuthorizationState?
    public var alarms: Int?
    /// Set when the state file was damaged and kept aside: what happened and where it is.
    public var stateFileProblem: String?
    /// Set when the configuration file could not be used at the start: its problems, and what the node runs with.
    public var configurationProblem: String?
    /// The groups the node belongs to (`node.groups`); absent when none.
    public var groups: [String]?
    /// How long, in seconds, the node's hardware prompt waits for a press before it answers an
    /// authorization request undecided (`hardware.prompt-duration`).
    public var authorizationPrompt: TimeInterval?
    /// In the will (the offline status the broker publishes when the node's connection is lost):
    /// when the node's online status began. MQTT cannot stamp the moment a will is published,
    /// so the will has no `since`; a clean shutdown's offline status has one.
    @OptionalInstant public var lastOnline: Date?

    /// The prompt's length assumed for a node that does not say (older versions), or says
    /// something outside what alarmd allows: alarmd's default.
    public static let defaultAuthorizationPrompt: TimeInterval = 30
    /// The prompt lengths alarmd accepts (`hardware.prompt-duration`).
    public static let authorizationPromptRange: ClosedRange<TimeInterval> = 5...600

    /// The prompt's length in seconds, as a client should rely on it: the status is anyone's to
    /// publish, so a value alarmd would not send (not finite, out of range) counts as absent.
    public var promptSeconds: TimeInterval {
        authorizationPrompt.flatMap { Self.authorizationPromptRange.contains($0) ? $0 : nil } ?? Self.defaultAuthorizationPrompt
    }

    /// How long to wait for the answer to a request that may prompt on the node's hardware: the
    /// usual `timeout`, the prompt, and 10 s for the press to be seen and the answer to arrive.
    public static func replyWaitWhilePrompting(_ status: NodeStatus?, timeout: Duration) -> Duration {
        timeout + .seconds(status?.promptSeconds ?? defaultAuthorizationPrompt) + .seconds(10)
    }

    /// How long a request waits for its answer: ``replyWaitWhilePrompting(_:timeout:)`` when it
    /// may prompt (`mayPrompt`, and `status` says undetermined, or is not known while the broker
    /// is reachable), else `timeout`.
    public static func replyWait(_ status: NodeStatus?, mayPrompt: Bool, brokerReachable: Bool, timeout: Duration) -> Duration {
        let prompts = mayPrompt && (status.map { ($0.authorization ?? .notDetermined) == .notDetermined } ?? brokerReachable)
        return prompts ? replyWaitWhilePrompting(status, timeout: timeout) : timeout
    }

    /// The offline status of a clean shutdown at `date`, of a node in `groups`.
    public static func offline(since date: Date, groups: [String]? = nil) -> NodeStatus {
        NodeStatus(state: "offline", since: date, groups: groups)
    }

    /// The will of a node in `groups`, online since `date`.
    public static func will(lastOnline date: Date, groups: [String]? = nil) -> NodeStatus {
        NodeStatus(state: "offline", groups: groups, lastOnline: date)
    }

    /// The state and since when, in words: `online since …`, `offline since …`, or for a lost
    /// connection `offline: the connection was lost; it had come online at …`.
    public var stateDescription: String {
        if let since { return "\(state) since \(AlarmJSON.string(from: since))" }
        if let lastOnline { return "\(state): the connection was lost; it had come online at \(AlarmJSON.string(from: lastOnline))" }
        return state
    }

    public init(state: String, version: String? = nil, since: Date? = nil, timeZone: String? = nil,
                clockSynchronized: Bool? = nil, authorization: AlarmManager.AuthorizationState? = nil,
                alarms: Int? = nil, stateFileProblem: String? = nil, authorizationPrompt: TimeInterval? = nil,
                groups: [String]? = nil, lastOnline: Date? = nil, configurationProblem: String? = nil) {
        self.groups = groups
        self.configurationProblem = configurationProblem
        self.lastOnline = lastOnline
        self.state = state
        self.version = version
        self.since = since
        self.timeZone = timeZone
        self.clockSynchronized = clockSynchronized
        self.authorization = authorization
        self.alarms = alarms
        self.stateFileProblem = stateFileProblem
        self.authorizationPrompt = authorizationPrompt
    }

    public var isOnline: Bool { state == "online" }
}

extension Substring.UTF8View {
    /// The rest after `prefix`, or nil when it does not start with it.
    fileprivate func removingPrefix(_ prefix: String.UTF8View) -> Substring.UTF8View? {
        starts(with: prefix) ? dropFirst(prefix.count) : nil
    }
}
