
extension AlarmManager {
    /// AlarmKit's error, with exactly AlarmKit's cases, so that an exhaustive `switch` written
    /// for iOS compiles unchanged. The failures only a node has are ``AlarmNodeError``s, thrown by
    /// the same calls.
    public enum AlarmError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The node already holds its maximum number of alarms.
        case maximumLimitReached

        /// What went wrong and what to do.
        public var message: String {
            switch self {
            case .maximumLimitReached:
                "the node already holds its maximum number of alarms: cancel one, or raise limits.max-alarms in the node's config"
            }
        }

        public var description: String { "\(NodeFailure.alarmKit(self).code.rawValue): \(message)" }
    }
}
