import FoundationEssentials

extension AlarmManager {
    /// AlarmKit's error, with exactly AlarmKit's cases, so that an exhaustive `switch` written
    /// for iOS compiles unchanged. The failures only a node has are ``AlarmNodeError``s, thrown by
    /// the same calls.
    public enum AlarmError: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
        /// The node already holds its maximum number of alarms.
        case maximumLimitReached

        /// What went wrong and what to do.
        public var message: String {
            switch self {
            case .maximumLimitReached:
                "the node already holds its maximum number of alarms: cancel one, or raise the limit (alarmd: limits.max-alarms in its config; "
                    + "a node in your process: EngineConfiguration's maximumAlarms)"
            }
        }

        public var description: String { "\(NodeFailure.alarmKit(self).code.rawValue): \(message)" }
        /// What `localizedDescription` shows, as an app shows an error: the message.
        public var errorDescription: String? { message }
    }
}
