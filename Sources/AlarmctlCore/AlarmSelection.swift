import AlarmKit
import Foundation

/// Finds alarms by full id, by a unique prefix of it, by a unique title, or all those an
/// operation applies to.
public enum AlarmSelection {
    /// The alarm whose id is `text` or starts with it (any case, hyphens optional), or whose
    /// title is `text` (any case). With `group`, the one alarm of that group whose title it is, when
    /// there is one, comes before a member's own (`alarmctl --group house stop "Wake up"`); an id
    /// prefix is never resolved that way.
    public static func resolve(_ text: String, among documents: [AlarmDocument], listing: String = "alarmctl list",
                               group: String? = nil) throws(AlarmctlError) -> AlarmDocument {
        let byID = documents.filter { $0.id.starts(withIDText: text) }
        let byTitle = documents.filter { document in
            !byID.contains { $0.id == document.id }
                && document.configuration.attributes.presentation.alert.title.lowercased() == text.lowercased()
        }
        let titledInGroup = byTitle.filter { group != nil && $0.group == group }
        let matches = byID.isEmpty && titledInGroup.count == 1 ? titledInGroup : byID + byTitle
        switch matches.count {
        case 1: return matches[0]
        case 0:
            throw .notFound("no alarm has the id or title '\(text)': `\(listing)` shows them")
        default:
            let shown = matches.map { "\($0.id.uuidString) \"\(AlarmText.title(of: $0))\"" }.sorted().joined(separator: ", ")
            throw .ambiguous("'\(text)' matches \(matches.count) alarms (\(shown)): give the id, or more of its characters")
        }
    }

    /// The alarms named by `texts`, in order and without repeats; `group` as for one text.
    public static func resolve(_ texts: [String], among documents: [AlarmDocument], listing: String = "alarmctl list",
                               group: String? = nil) throws(AlarmctlError) -> [AlarmDocument] {
        var seen = Set<UUID>()
        return try texts.map { text throws(AlarmctlError) in try resolve(text, among: documents, listing: listing, group: group) }
            .filter { seen.insert($0.id).inserted }
    }

    /// The alarms `--all` means for `operation`: those the node accepts it for (docs/mqtt.md,
    /// "Lifecycle"): in a state it accepts, and for snooze with a duration to count down again.
    public static func all(for operation: AlarmOperation, among documents: [AlarmDocument]) -> [AlarmDocument] {
        documents.filter { document in
            switch operation {
            case .cancel: true
            case .stop: document.state == .alerting
            case .countdown: document.state == .alerting && document.configuration.countdownDuration.flatMap { $0.postAlert ?? $0.preAlert } != nil
            case .pause: document.state == .countdown
            case .resume: document.state == .paused
            }
        }
    }

    /// Short ids for a list: the first 8 characters of each id, more when two would look alike.
    public static func shortIDs(_ ids: [UUID]) -> [UUID: String] {
        let texts = ids.map(\.uuidString)
        var length = 8
        while length < 36, Set(texts.map { $0.prefix(length) }).count < Set(texts).count { length += 1 }
        return Dictionary(ids.map { ($0, String($0.uuidString.prefix(length))) }, uniquingKeysWith: { first, _ in first })
    }
}
