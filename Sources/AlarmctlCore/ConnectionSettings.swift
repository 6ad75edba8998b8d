import AlarmKit

extension BrokerOptions {
    /// The node `alarmctl` talks to: these options, `--node` and `--timeout` (seconds to wait for
    /// the node's answer), over the environment variables that AlarmKit's
    /// `RemoteNodeSettings.fromEnvironment` reads (`ALARMD_BROKER`, `ALARMD_NODE`, …), checked: a
    /// malformed broker or node id is a usage error naming where it came from.
    public func settings(node: String? = nil, timeout: Double? = nil, environment: [String: String]) throws(AlarmctlError) -> RemoteNodeSettings {
        var settings = RemoteNodeSettings.fromEnvironment(environment)
        settings.origin = .commandLine
        if let text = broker ?? environment["ALARMD_BROKER"] {
            let source = broker == nil ? "ALARMD_BROKER" : "--broker"
            guard let (host, port) = RemoteNodeSettings.parseBroker(text) else {
                throw .usage(RemoteNodeSettings.malformedBrokerMessage(text, source: source))
            }
            (settings.host, settings.port) = (host, port)
        }
        if let node { settings.node = node }
        guard NodeTopics.isValidNodeID(settings.node) else {
            let source = node == nil ? "ALARMD_NODE" : "--node"
            throw .usage("\(source) '\(settings.node)' is not a node id: use letters, digits, '_' and '-' (at most 64)")
        }
        if let text = brokerProtocol ?? environment["ALARMD_BROKER_PROTOCOL"] {
            guard let setting = RemoteNodeSettings.BrokerProtocol(rawValue: text) else {
                let source = brokerProtocol == nil ? "ALARMD_BROKER_PROTOCOL" : "--broker-protocol"
                throw .usage("\(source) '\(text)' is not a protocol: write \(RemoteNodeSettings.BrokerProtocol.choices)")
            }
            settings.brokerProtocol = setting
        }
        settings.environmentProblem = nil  // the broker and protocol are checked above, with the option that overrides each
        if let prefix { settings.topicPrefix = prefix }
        guard NodeTopics.isValidPrefix(settings.topicPrefix) else {
            throw .usage("\(prefix == nil ? "ALARMD_PREFIX" : "--prefix") '\(settings.topicPrefix)' is not a topic prefix: leave out '+', '#' and a trailing '/'")
        }
        let overrides = [(username, \RemoteNodeSettings.username), (password, \.password),
                         (caFile, \.caFile), (certFile, \.certFile), (keyFile, \.keyFile)]
        for case let (value?, setting) in overrides { settings[keyPath: setting] = value }
        if settings.password != nil, settings.username == nil {
            throw .usage("a password is set without a username: add --username (or ALARMD_USERNAME)")
        }
        if (settings.certFile == nil) != (settings.keyFile == nil) {
            throw .usage("--cert-file and --key-file go together: give both, or neither")
        }
        if settings.certFile != nil, settings.caFile == nil {
            throw .usage("a client certificate needs TLS: add --ca-file (or ALARMD_CA_FILE)")
        }
        if let timeout {
            guard timeout.isFinite, timeout >= 0.1, timeout <= 600 else {
                throw .usage("--timeout \(timeout) is out of range: give seconds from 0.1 to 600")
            }
            settings.timeout = .milliseconds(Int((timeout * 1000).rounded()))
        }
        return settings
    }
}
