import AlarmKit
import Foundation

/// Finds alarms by full id, by a unique prefix of it, or all those an operation applies to.
public enum AlarmSelection {
    /// The alarm whose id is `text` or starts with it (any case, hyphens optional).
    public static func resolve(_ text: String, among documents: [AlarmDocument]) throws(AlarmctlError) -> AlarmDocument {
        let wanted = normalized(text)
        guard !wanted.isEmpty, wanted.allSatisfy(\.isHexDigit) else {
            throw .usage("'\(text)' is not an alarm id: give the id, or its first characters, as `alarmctl list` shows them")
        }
        let matches = documents.filter { normalized($0.id.uuidString).hasPrefix(wanted) }
        switch matches.count {
        case 1:
            return matches[0]
        case 0:
            throw .notFound("no alarm has an id starting with '\(text)': `alarmctl list` shows the ids")
        default:
            let shown = matches.map(\.id.uuidString).sorted().joined(separator: ", ")
            throw .ambiguous("'\(text)' matches \(matches.count) alarms (\(shown)): give more characters of the id")
        }
    }

    /// The alarms named by `texts`, in order and without repeats.
    public static func resolve(_ texts: [String], among documents: [AlarmDocument]) throws(AlarmctlError) -> [AlarmDocument] {
        var selected: [AlarmDocument] = []
        for text in texts {
            let document = try resolve(text, among: documents)
            if !selected.contains(where: { $0.id == document.id }) { selected.append(document) }
        }
        return selected
    }

    /// The alarms `--all` means for `operation`: those in a state the operation accepts (SPEC §3).
    public static func all(for operation: AlarmOperation, among documents: [AlarmDocument]) -> [AlarmDocument] {
        documents.filter { accepts(operation, $0.state) }
    }

    /// Whether the node accepts `operation` for an alarm in `state`.
    public static func accepts(_ operation: AlarmOperation, _ state: Alarm.State) -> Bool {
        switch operation {
        case .cancel: true
        case .stop, .countdown: state == .alerting
        case .pause: state == .countdown
        case .resume: state == .paused
        }
    }

    /// Short ids for a list: the first 8 characters of each id, more when two would look alike.
    public static func shortIDs(_ ids: [UUID]) -> [UUID: String] {
        let texts = ids.map(\.uuidString)
        var length = 8
        while length < 36, Set(texts.map { $0.prefix(length) }).count < Set(texts).count { length += 1 }
        return Dictionary(ids.map { ($0, String($0.uuidString.prefix(length))) }, uniquingKeysWith: { first, _ in first })
    }

    private static func normalized(_ text: String) -> String {
        text.uppercased().filter { $0 != "-" }
    }
}
