import FoundationEssentials

/// Why text in the human syntax (`10m`, `07:00 weekdays`, `2026-12-24T18:00`, `10m Tea`) did not
/// become a timer or an alarm: a stable `code` and a `message` that names the accepted forms.
public enum HumanSyntaxError: Error, Sendable, Hashable, LocalizedError, CustomStringConvertible {
    /// The text is not in an accepted form; the message says which forms are.
    case unreadable(String)
    /// The text was read, but the node would refuse what it asks for; `part` names what to change.
    case refused(part: Part, reason: String)

    /// The part of a request the node's checks refused.
    public enum Part: String, Sendable, Hashable { case title, sound, date, configuration }

    /// `unreadable` or `refused`.
    public var code: String { if case .unreadable = self { "unreadable" } else { "refused" } }

    /// What went wrong and what to do.
    public var message: String {
        switch self {
        case .unreadable(let message): message
        case .refused(.title, let reason): "the title \(reason)"
        case .refused(.sound, let reason): "the sound \(reason)"
        case .refused(.date, let reason): "the date \(reason): give a date in the future"
        case .refused(.configuration, let reason): reason
        }
    }

    public var description: String { "\(code): \(message)" }
    /// What `localizedDescription` shows, as an app shows an error: the message.
    public var errorDescription: String? { message }
}
