import AlarmKit
import FoundationEssentials
import LinuxSystem
import Mosquitto
import TOMLKit

/// One problem found in a configuration file, with where it is and what to do.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The key's path, e.g. `broker.port`; empty for the file as a whole.
    public var key: String
    public var message: String
    public var description: String { key.isEmpty ? message : "\(key): \(message)" }
}

/// Why a configuration could not be used: every problem found, not only the first.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var problems: [ConfigurationProblem]
    public var description: String {
        "\(file) has \(problems.count) problem\(problems.count == 1 ? "" : "s"):\n"
            + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// Reads alarmd's TOML configuration, checking every key and collecting every problem.
public enum ConfigurationReader {
    /// Reads the file at `path`, applied over the defaults.
    public static func read(path: String) throws(ConfigurationError) -> NodeConfiguration {
        let contents: Data
        do { contents = try AtomicFile.read(path) } catch {
            throw ConfigurationError(file: path, problems: [.init(key: "", message: "cannot be read: \(error.message)")])
        }
        guard let text = String(validating: contents, as: UTF8.self) else {
            throw ConfigurationError(file: path, problems: [.init(key: "", message: "is not UTF-8 text: save it as UTF-8 (an editor's encoding setting)")])
        }
        return try parse(text, file: path)
    }

    /// Reads configuration text, applied over the defaults.
    public static func parse(_ text: String, file: String = "configuration") throws(ConfigurationError) -> NodeConfiguration {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch let error as TOMLParseError {
            throw ConfigurationError(file: file, problems: [.init(
                key: "", message: "is not valid TOML at line \(error.source.begin.line), column \(error.source.begin.column)" + syntaxDetail(text, error))])
        } catch { throw ConfigurationError(file: file, problems: [.init(key: "", message: "is not valid TOML: \(error)")]) }
        var reader = Reader(root: table)
        let configuration = reader.configuration()
        guard reader.problems.isEmpty else { throw ConfigurationError(file: file, problems: reader.problems) }
        return configuration
    }

    /// toml++'s description of a syntax error, with a hint: `; text goes in quotes: key = "value"` when TOML could not read a
    /// line `key = value` whose value is text, or that a quote is not closed. On a password's line the description, which
    /// quotes part of the value, is left out and the value is not repeated: the message may reach the journal.
    private static func syntaxDetail(_ text: String, _ error: TOMLParseError) -> String {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline), index = error.source.begin.line - 1
        let line = lines.indices.contains(index) ? lines[index] : ""
        let isPassword = line.prefix { $0 != "=" }.contains("password")
        let description = isPassword ? "" : ": \(error.description)"
        // A text the line (or the file) ends inside: toml++ names control characters or the end of the file.
        if error.description.contains(" string: "), !line.isEmpty, error.source.begin.column > line.unicodeScalars.count {
            return description + "; a quote is not closed: end the text on its line with the quote it starts with"
        }
        guard !error.description.contains("key"), !error.description.contains("table"), let equals = line.firstIndex(of: "=") else { return description }
        let key = line[..<equals].trimmingCharacters(in: .whitespaces)
        let value = line[equals...].dropFirst().prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
        // toml++ may take text for a number, a boolean or a time first (192.168.1.10, fe80::1, 10m): a letter or two dots say
        // it is not; True is a boolean mistyped.
        let looksLikeText = value.contains(where: \.isLetter) || value.count(where: { $0 == "." }) > 1
        guard !value.isEmpty, !"\"'[{".contains(value.first!), !["true", "false"].contains(value.lowercased()),
              error.description.contains("could not determine value type") || looksLikeText else { return description }
        return description + "; text goes in quotes: \(key) = \"\(isPassword ? "…" : value)\""
    }

    /// Walks the TOML tables, reading known keys and reporting wrong types, bad values and unknown keys.
    private struct Reader {
        let root: TOMLTable
        var problems: [ConfigurationProblem] = []

        /// Each table's keys, by the table's name ("" for the top level).
        static let knownKeys: [String: Set<String>] = [
            "": ["node", "broker", "limits", "hardware", "home-assistant", "intents"],
            "node": ["id", "topic-prefix", "state-directory", "time-zone", "authorization", "groups"],
            "broker": ["host", "port", "username", "password", "password-file", "tls", "ca-file", "cert-file", "key-file",
                       "tls-insecure", "keepalive", "client-id", "outgoing-buffer", "protocol"],
            "limits": ["max-alarms", "alert-timeout", "silence-action", "missed-alarm-grace"],
            "hardware": ["mode", "chip", "buzzer", "led", "stop-button", "snooze-button", "debounce", "long-press",
                         "escalate-after", "prompt-duration"],
            "intents": ["allow"],
            "home-assistant": ["discovery", "prefix"],
        ]

        mutating func configuration() -> NodeConfiguration {
            var configuration = NodeConfiguration()
            checkKeys(root, path: "")

            if let node = table(root, "node") {
                if let id = string(node, "node.id", valid: NodeTopics.isValidNodeID,
                                   otherwise: { "'\($0)' may only hold letters, digits, '_' and '-' (at most 64)" }) { configuration.node.id = id }
                if let prefix = string(node, "node.topic-prefix", valid: NodeTopics.isValidPrefix,
                                       otherwise: { "'\($0)' must not contain wildcards or end with '/'" }) { configuration.node.topicPrefix = prefix }
                if let directory = string(node, "node.state-directory", valid: { $0.hasPrefix("/") }, otherwise: { $0.isEmpty ? "is empty: name a folder, or leave it out for /var/lib/alarmd"
                    : "'\($0)' is relative, so it would depend on the folder alarmd starts in (/ under systemd): give the full path, such as /var/lib/alarmd" }) {
                    configuration.node.stateDirectory = directory
                }
                if let zone = string(node, "node.time-zone"), !zone.isEmpty {
                    if namedTimeZone(zone) != nil { configuration.node.timeZone = zone } else {
                        problem("node.time-zone", "\(NodeConfiguration.unusableTimeZoneReason(zone)); leave it out to follow the system's")
                    }
                }
                if let mode = choice(node, "node.authorization", NodeConfiguration.AuthorizationMode.self) { configuration.node.authorization = mode }
                if let groups = groups(node, "node.groups") { configuration.node.groups = groups }
            }

            if let broker = table(root, "broker") {
                let setting = value(broker, "broker.protocol", expected: "must be \"auto\" (MQTT 5, falling back to 3.1.1), \"5\" or \"3.1.1\"") {
                    ($0.string ?? $0.int.map(String.init)).flatMap(MQTTProtocolSetting.init(rawValue:))
                }
                if let setting { configuration.broker.protocolSetting = setting }
                if let host = string(broker, "broker.host") {
                    let parts = host.split(separator: ":", omittingEmptySubsequences: false)
                    if host.isEmpty { problem("broker.host", "is empty: name the broker, or leave it out for localhost") } else if host.contains(where: { "/[]".contains($0) }) || (parts.count == 2 && (parts[1].isEmpty || Int(parts[1]) != nil)) {
                        problem("broker.host", "'\(host)' is not a host name or address: write the host alone, without brackets (host = \"broker.lan\", \"::1\"), and the port as port = 1883")
                    } else { configuration.broker.host = host }
                }
                if let port = integer(broker, "broker.port", in: 1...65_535) { configuration.broker.port = port }
                configuration.broker.username = string(broker, "broker.username")
                configuration.broker.password = string(broker, "broker.password")
                configuration.broker.passwordFile = string(broker, "broker.password-file", valid: FileManager.default.isReadableFile(atPath:),
                                                           otherwise: { "'\($0)' cannot be read: check the path and that alarmd's user may read it" })
                if let tls = bool(broker, "broker.tls") { configuration.broker.tls = tls }
                for (key, path) in [("ca-file", \NodeConfiguration.Broker.caFile), ("cert-file", \.certFile), ("key-file", \.keyFile)] {
                    if let file = string(broker, "broker.\(key)", valid: FileManager.default.isReadableFile(atPath:),
                                         otherwise: { "'\($0)' cannot be read" }) { configuration.broker[keyPath: path] = file }
                }
                if let insecure = bool(broker, "broker.tls-insecure") { configuration.broker.tlsInsecure = insecure }
                if let keepAlive = integer(broker, "broker.keepalive", in: 5...3600) { configuration.broker.keepAlive = keepAlive }
                configuration.broker.clientID = string(broker, "broker.client-id", valid: { (1...65_535).contains($0.utf8.count) },
                                                       otherwise: { _ in "must be 1 to 65535 bytes: leave it out for alarmd-<node id>" })
                if let limit = integer(broker, "broker.outgoing-buffer", in: 10...1_000_000) { configuration.broker.outgoingBufferLimit = limit }
                if configuration.broker.password != nil, configuration.broker.passwordFile != nil {
                    problem("broker.password", "give either password or password-file, not both")
                } else if configuration.broker.username == nil, configuration.broker.password ?? configuration.broker.passwordFile != nil {
                    problem("broker.username", "a password is set without a username: set the username the broker knows that password by")
                }
                if (configuration.broker.certFile == nil) != (configuration.broker.keyFile == nil) {
                    problem(configuration.broker.certFile == nil ? "broker.cert-file" : "broker.key-file",
                            "cert-file and key-file go together: the client certificate and its private key, set both or neither")
                }
                if !configuration.broker.tls, configuration.broker.caFile != nil || configuration.broker.certFile != nil {
                    problem("broker.tls", "ca-file or cert-file is set but tls is false: set tls = true")
                }
                if configuration.broker.tls, configuration.broker.caFile == nil {
                    problem("broker.ca-file", "tls is on but ca-file is not set: name the CA certificate that signed the broker's")
                }
            }

            if let limits = table(root, "limits") {
                if let max = integer(limits, "limits.max-alarms", in: NodeConfiguration.Limits.maxAlarmsRange) { configuration.limits.maxAlarms = max }
                if let timeout = seconds(limits, "limits.alert-timeout", in: 5...86_400) { configuration.limits.alertTimeout = timeout }
                if let action = choice(limits, "limits.silence-action", EngineConfiguration.SilenceAction.self) { configuration.limits.silenceAction = action }
                if let grace = seconds(limits, "limits.missed-alarm-grace", in: 0...86_400) { configuration.limits.missedAlarmGrace = grace }
            }

            if let hardware = table(root, "hardware") {
                if let mode = choice(hardware, "hardware.mode", NodeConfiguration.Hardware.Mode.self) { configuration.hardware.mode = mode }
                if let chip = string(hardware, "hardware.chip") { configuration.hardware.chip = chip }
                let parts = NodeConfiguration.Hardware.partKeys
                for (key, path) in parts {
                    guard let setting = line(hardware, "hardware.\(key)", defaults: NodeConfiguration.Hardware()[keyPath: path]!) else { continue }
                    if let offset = setting.flatMap({ Int($0.line) }), UInt32(exactly: offset) == nil {
                        problem("hardware.\(key)", "\(offset) is not a line offset: " + (offset < 0 ? "offsets start at 0" : "no chip has that many lines"))
                    }
                    configuration.hardware[keyPath: path] = setting
                }
                for (index, (key, path)) in parts.enumerated() {
                    guard let line = configuration.hardware[keyPath: path]?.line,
                          let first = parts[..<index].first(where: { configuration.hardware[keyPath: $0.1]?.line == line })?.0 else { continue }
                    // The part the file sets is the one to move: the other may hold the line by default.
                    let (moved, other) = hardware[key] == nil ? (first, key) : (key, first)
                    let none = ["led", "snooze-button"].contains(other) ? " (\(other) = false for none)" : ""  // the others are required
                    problem("hardware.\(moved)", hardware[other] == nil
                        ? "line \(line) is the \(other)'s default: choose another line, or give \(other) one of its own\(none)"
                        : "line \(line) is the \(other)'s already: give each part a line of its own")
                }
                if configuration.hardware.buzzer == nil { problem("hardware.buzzer", "a buzzer line is required") }
                if configuration.hardware.stopButton == nil {
                    problem("hardware.stop-button", "is required; a single-button board wires its button here and sets snooze-button = false (short press = snooze, long press = stop)")
                }
                if let value = seconds(hardware, "hardware.debounce", in: 0...0.5) { configuration.hardware.debounce = value }
                if let value = seconds(hardware, "hardware.long-press", in: 0.2...10) { configuration.hardware.longPress = value }
                if let value = seconds(hardware, "hardware.escalate-after", in: 0...3600) { configuration.hardware.escalateAfter = value }
                if let value = seconds(hardware, "hardware.prompt-duration", in: NodeStatus.authorizationPromptRange) { configuration.hardware.promptDuration = value }
            }
            if let intents = table(root, "intents"), let filters = strings(intents, "intents.allow") {
                let problems = filters.compactMap(IntentTopics.problem(inFilter:))
                problems.forEach { problem("intents.allow", $0) }
                if problems.isEmpty { configuration.intents.allow = filters }
            }
            if let homeAssistant = table(root, "home-assistant") {
                if let discovery = bool(homeAssistant, "home-assistant.discovery") { configuration.homeAssistant.discovery = discovery }
                if let prefix = string(homeAssistant, "home-assistant.prefix",
                                       valid: { !($0.isEmpty || $0.contains("+") || $0.contains("#") || $0.hasSuffix("/")) },
                                       otherwise: { "'\($0)' must be a topic level without wildcards, like \"homeassistant\"" }) {
                    configuration.homeAssistant.prefix = prefix
                }
            }
            return configuration
        }

        mutating func problem(_ key: String, _ message: String) {
            problems.append(ConfigurationProblem(key: key, message: message))
        }

        /// Reports the keys of `table` that are not `known` (by default, those of the table at `path`).
        mutating func checkKeys(_ table: TOMLTable, path: String, known: Set<String>? = nil) {
            let known = known ?? Self.knownKeys[path] ?? []
            for key in table.keys where !known.contains(key) {
                let name = path.isEmpty ? key : "\(path).\(key)"
                let meant = Self.nearest(to: key, among: known)
                if let home = Self.knownKeys.first(where: { !$0.key.isEmpty && $0.key != path && $0.value.contains(key) })?.key {
                    problem(name, "belongs under [\(home)]" + (meant.map { ", or did you mean '\($0)'?" } ?? ": move it there"))
                } else {
                    problem(name, "unknown key\(meant.map { " (did you mean '\($0)'?)" } ?? ""); known keys here: \(known.sorted().joined(separator: ", "))")
                }
            }
        }

        /// The name among `names` that `text` may have meant: one ending in `-text` (`topic-prefix`
        /// for `prefix`), else the nearest if near enough; the first in alphabetical order of those
        /// alike, so that each run says the same.
        private static func nearest(to text: String, among names: some Collection<String>) -> String? {
            let names = names.sorted()
            let closest = names.min { EditDistance.between($0, text) < EditDistance.between($1, text) }
            return names.first { $0.hasSuffix("-" + text) }
                ?? closest.flatMap { EditDistance.between($0, text) <= max(2, min(3, text.count / 2)) ? $0 : nil }
        }

        /// The table `[key]`, its keys checked.
        mutating func table(_ table: TOMLTable, _ key: String) -> TOMLTable? {
            let section = value(table, key, expected: "must be a table, written [\(key)]") { $0.table }
            if let section { checkKeys(section, path: key) }
            return section
        }

        private func leaf(_ path: String) -> String { String(path.split(separator: ".").last ?? "") }

        /// The value at `path` in `table` as `read` takes it; nil when absent, and when `read`
        /// refuses it, which is reported as "`path`: `expected`".
        private mutating func value<Value>(
            _ table: TOMLTable, _ path: String, expected: String, _ read: (any TOMLValueConvertible) -> Value?
        ) -> Value? {
            guard let value = table[leaf(path)] else { return nil }
            let result = read(value)
            if result == nil { problem(path, expected) }
            return result
        }

        mutating func string(_ table: TOMLTable, _ path: String) -> String? {
            value(table, path, expected: "must be a string in quotes") { $0.string }
        }

        /// The string at `path` when `valid`; otherwise `problem(text)` is reported and it is nil.
        mutating func string(_ table: TOMLTable, _ path: String, valid: (String) -> Bool, otherwise problem: (String) -> String) -> String? {
            guard let text = string(table, path) else { return nil }
            let isValid = valid(text)
            if !isValid { self.problem(path, problem(text)) }
            return isValid ? text : nil
        }

        mutating func strings(_ table: TOMLTable, _ path: String) -> [String]? {
            value(table, path, expected: "must be a list of strings in quotes, like [\"home/lights/+/set\"]") { value in
                let texts = value.array?.compactMap(\.string)
                return texts?.count == value.array?.count ? texts : nil
            }
        }

        mutating func bool(_ table: TOMLTable, _ path: String) -> Bool? {
            value(table, path, expected: "must be true or false") { $0.bool }
        }

        mutating func integer(_ table: TOMLTable, _ path: String, in range: ClosedRange<Int>) -> Int? {
            value(table, path, expected: "must be a whole number from \(range.lowerBound) to \(range.upperBound)") { value in
                value.int.flatMap { range.contains($0) ? $0 : nil }
            }
        }

        /// Seconds as a number, or a duration string such as "90s", "10m", "1h30m".
        mutating func seconds(_ table: TOMLTable, _ path: String, in range: ClosedRange<Double>) -> TimeInterval? {
            let unitless = table[leaf(path)]?.string.flatMap { DurationText.isPlainNumber($0) ? "\"\($0)\" has no unit; it " : nil }
            let expected = "\(unitless ?? "")must be seconds from \(range.lowerBound) to \(range.upperBound), as a number or a string with its unit like \"90s\", \"10m\", \"1h30m\""
            return value(table, path, expected: expected) { value in
                // A string without a unit ("10") that could as well be minutes is refused, as in alarmctl.
                let seconds = value.double ?? value.int.map(Double.init) ?? value.string.flatMap { text in
                    DurationText.seconds(from: text).flatMap { DurationText.isPlainNumber(text) && range.contains($0 * 60) ? nil : $0 }
                }
                return seconds.flatMap { $0.isFinite && range.contains($0) ? $0 : nil }
            }
        }

        mutating func choice<T: RawRepresentable & CaseIterable>(_ table: TOMLTable, _ path: String, _ type: T.Type) -> T? where T.RawValue == String {
            choice(table, path, among: T.allCases.map(\.rawValue)).flatMap(T.init(rawValue:))
        }

        /// The string at `path` when it is one of `names`; otherwise that is reported, with the name it may have meant.
        mutating func choice(_ table: TOMLTable, _ path: String, among names: [String]) -> String? {
            string(table, path, valid: names.contains) { text in
                "'\(text)' is not one of: \(names.map { "\"\($0)\"" }.joined(separator: ", "))"
                    + (Self.nearest(to: text, among: names).map { " (did you mean '\($0)'?)" } ?? "")
            }
        }

        /// A list of group names, each valid as a node id, none twice.
        mutating func groups(_ table: TOMLTable, _ path: String) -> [String]? {
            guard let array = value(table, path, expected: "must be a list of group names, e.g. [\"house\", \"kids\"]", { $0.array }) else {
                return nil
            }
            let problemsBefore = problems.count
            for (index, element) in array.enumerated() {
                if let name = element.string, NodeTopics.isValidNodeID(name) {
                    if array[..<index].contains(where: { $0.string == name }) { problem(path, "'\(name)' is listed twice") }
                } else { problem(path, "'\(element.string ?? "\(element)")' is not a group name: use letters, digits, '_' and '-' (at most 64)") }
            }
            return problems.count == problemsBefore ? array.compactMap(\.string) : nil
        }

        /// A part's GPIO line: `17`, `"GPIO17"`, `false` (none: `.some(nil)`), or `{ line = 17, active-low = true,
        /// bias = "pull-up" }`; nil when absent or unreadable. What it does not say (`active-low`, `bias`) is
        /// the part's default, so that `stop-button = 22` is still an active-low button with the pull-up.
        mutating func line(_ table: TOMLTable, _ path: String, defaults: NodeConfiguration.Hardware.Line) -> NodeConfiguration.Hardware.Line?? {
            guard let value = table[leaf(path)] else { return nil }
            if let flag = value.bool, !flag { return .some(nil) }
            var result = defaults
            if let line = value.int.map(String.init) ?? value.string { result.line = line; return result }
            guard let nested = value.table else {
                problem(path, "must be a line offset, a line name, false, or { line = 17, active-low = true, bias = \"pull-up\" }")
                return nil
            }
            checkKeys(nested, path: path, known: ["line", "active-low", "bias"])
            guard let line = nested["line"].flatMap({ $0.int.map(String.init) ?? $0.string }) else {
                problem("\(path).line", "is required: a line offset or name")
                return nil
            }
            result.line = line
            // A pull-down is a button wired to 3.3 V: pressed reads high, unless the table says otherwise.
            if nested["active-low"] == nil, nested["bias"]?.string == "pull-down" { result.activeLow = false }
            if let activeLow = bool(nested, "\(path).active-low") { result.activeLow = activeLow }
            if let bias = choice(nested, "\(path).bias", among: ["pull-up", "pull-down", "disabled", "as-is"]) { result.bias = bias }
            return result
        }
    }
}
