import FoundationEssentials

/// Where a node may publish its intents' messages: an intent publishes with the node's broker
/// identity, which may be allowed much more than whoever scheduled the alarm (docs/configuration.md,
/// `[intents]`).
///
/// Always under `<base>/intents/#`; elsewhere only where a filter of `intents.allow` matches.
/// Never a command topic of any node (`<prefix>/+/cmd/#`, or any topic ending in
/// `/cmd/<operation>`) and never a node's buttons or state (``nodeSections`` of `<prefix>/+`;
/// with no prefix, this node's), whatever the filters say.
public struct IntentTopics: Sendable, Hashable {
    /// The configuration key that lists the extra topic filters.
    public static let allowKey = "intents.allow"

    public let topics: NodeTopics
    /// The node's topic prefix, whose `<prefix>/+/cmd/#` are commands of other nodes.
    public let prefix: String
    /// MQTT topic filters (`+` and `#` allowed) where intents may publish besides `<base>/intents/#`.
    public let allowed: [String]

    public init(prefix: String, node: String, allowed: [String] = []) {
        self.topics = NodeTopics(prefix: prefix, node: node)
        self.prefix = prefix
        self.allowed = allowed
    }

    /// Why an intent may not publish to `topic`, or nil when it may.
    public func refusal(of topic: String) -> String? {
        if let protection = protection(of: topic) { return "\(protection): an intent may never publish there" }
        if topic.hasPrefix("\(topics.base)/intents/") { return nil }
        if allowed.contains(where: { Self.matches(filter: $0, topic: topic) }) { return nil }
        return "'\(topic)' is neither under \(topics.base)/intents/ nor matched by \(Self.allowKey) in alarmd's configuration: publish under \(topics.base)/intents/, or add a filter that matches it (e.g. \"\(topic)\") to [intents] allow"
    }

    /// Why nothing the node sends on someone's say (an intent, a reply to a command) may go to
    /// `topic`: a node's command topic, or a node's own buttons or state; nil when it is neither.
    public func protection(of topic: String) -> String? {
        let levels = Self.levels(topic)
        let prefixLevels = prefix.isEmpty ? [] : Self.levels(prefix)
        let isUnderOwnPrefixCmd = levels.count >= prefixLevels.count + 2
            && levels.starts(with: prefixLevels) && levels[prefixLevels.count + 1] == "cmd"
        if isUnderOwnPrefixCmd || isCommandTopic(levels) { return "'\(topic)' is a node's command topic" }
        let nodes = prefix.isEmpty ? topics.base : "\(prefix)/+"
        return Self.nodeSections.first { Self.matches(filter: "\(nodes)/\($0)/#", topic: topic) }
            .map { "'\(topic)' is an alarmd node's own \($0) topic" }
    }

    /// What a node publishes or takes besides commands: its simulated and Home Assistant buttons,
    /// its status, alarm documents and events.
    static let nodeSections = ["sim", "ha", "status", "alarms", "events"]

    /// The fields of `configuration` whose intents may not publish where they say, with why.
    public func refusals(in configuration: AlarmManager.AlarmConfiguration<JSONValue>) -> [(field: String, reason: String)] {
        [("stopIntent", configuration.stopIntent), ("secondaryIntent", configuration.secondaryIntent)].compactMap { field, intent in
            guard case .publish(let topic, _, _)? = intent, let reason = refusal(of: topic) else { return nil }
            return ("configuration.\(field).publish.topic", reason)
        }
    }

    /// A topic ending in `/cmd/<operation>`: what every alarmd node takes commands on.
    private func isCommandTopic(_ levels: [Substring]) -> Bool {
        levels.count >= 2 && levels[levels.count - 2] == "cmd"
            && NodeCommand.Operation(rawValue: String(levels[levels.count - 1])) != nil
    }

    private static func levels(_ text: String) -> [Substring] { text.split(separator: "/", omittingEmptySubsequences: false) }

    /// True when the MQTT topic filter matches the topic name (MQTT 3.1.1, 4.7): `+` is one
    /// level, a final `#` is any number of levels (none too), and a filter starting with a
    /// wildcard does not match a topic starting with `$`.
    public static func matches(filter: String, topic: String) -> Bool {
        if topic.hasPrefix("$"), filter.hasPrefix("+") || filter.hasPrefix("#") { return false }
        let filterLevels = levels(filter), topicLevels = levels(topic)
        for (index, level) in filterLevels.enumerated() {
            if level == "#" { return true }
            guard index < topicLevels.count else { return false }
            if level != "+", level != topicLevels[index] { return false }
        }
        return filterLevels.count == topicLevels.count
    }

    /// Why `filter` is not a valid MQTT topic filter, or nil when it is.
    public static func problem(inFilter filter: String) -> String? {
        guard !filter.isEmpty, filter.utf8.count <= 65_535, !filter.contains("\u{0}") else {
            return "'\(filter)' must be a topic filter of 1 to 65535 bytes"
        }
        let filterLevels = levels(filter)
        for (index, level) in filterLevels.enumerated() {
            if level.contains("#"), level != "#" || index != filterLevels.count - 1 {
                return "'\(filter)': '#' must be a whole level and the last one, as in \"home/lights/#\""
            }
            if level.contains("+"), level != "+" { return "'\(filter)': '+' must be a whole level, as in \"home/+/set\"" }
        }
        return nil
    }
}
