import AlarmKit
import Foundation

/// The page's requests, checked against what the companion knows before anything reaches a node:
/// an unknown node, an unknown or malformed alarm id, an unknown action or an unreadable body is
/// refused here with a clear error, and nothing is sent.
public enum CompanionRequests {
    /// The largest request body accepted (a new alarm's text, a password).
    public static let maximumBodySize = 4096

    /// An action on one alarm, checked.
    public struct AlarmAction: Sendable, Equatable {
        public var node: String
        public var alarmID: UUID
        public var action: CompanionAction
    }

    /// Checks `POST /api/nodes/<node>/alarms/<id>/<action>` against the nodes' current state.
    public static func alarmAction(
        node: String, alarm: String, action: String, nodes: [String: KnownNode]
    ) throws(CompanionError) -> AlarmAction {
        guard let known = nodes[node] else { throw .unknownNode(node) }
        let (id, action) = try read(alarm: alarm, action: action)
        guard known.documents.contains(where: { $0.id == id }) else { throw .unknownAlarm(id.uuidString, node: node) }
        guard known.isOnline else { throw unreachable(node, known) }
        return AlarmAction(node: node, alarmID: id, action: action)
    }

    /// The action's name and the alarm id of an action's path, read.
    private static func read(alarm: String, action: String) throws(CompanionError) -> (UUID, CompanionAction) {
        guard let action = CompanionAction(rawValue: action) else {
            let names = CompanionAction.allCases.map(\.rawValue).joined(separator: ", ")
            throw .badRequest("'\(action)' is not an action: use one of \(names)")
        }
        guard let id = UUID(uuidString: alarm) else {
            throw .badRequest("'\(alarm)' is not an alarm id: an id is a UUID, e.g. 2F1E5C3A-…")
        }
        return (id, action)
    }

    /// An action on one alarm of a group, checked: it goes to the group, so every member acts.
    public struct GroupAlarmAction: Sendable, Equatable {
        public var group: String
        public var alarmID: UUID
        public var action: CompanionAction
    }

    /// Checks `POST /api/groups/<group>/alarms/<id>/<action>`: a member must hold the alarm
    /// (scheduled through the group), and one of those must be online.
    public static func groupAlarmAction(
        group: String, alarm: String, action: String, nodes: [String: KnownNode]
    ) throws(CompanionError) -> GroupAlarmAction {
        let (id, action) = try read(alarm: alarm, action: action)
        let holders = nodes.values.filter { $0.documents.contains { $0.id == id && $0.group == group } }
        guard !holders.isEmpty else { throw .unknownAlarm(id.uuidString, group: group) }
        guard holders.contains(where: \.isOnline) else {
            throw CompanionError(code: "unavailable", status: .serviceUnavailable,
                                 message: "every member of group '\(group)' that holds this alarm is offline: start alarmd on one, then try again")
        }
        return GroupAlarmAction(group: group, alarmID: id, action: action)
    }

    /// Checks `POST /api/nodes/<node>/alarms` (a new timer or alarm in the human syntax): the
    /// node must be online, and the body a form or JSON with a non-empty `text`.
    public static func newAlarmText(node: String, body: Data, contentType: String?, nodes: [String: KnownNode]) throws(CompanionError) -> String {
        guard let known = nodes[node] else { throw .unknownNode(node) }
        let fields = try formFields(body, contentType: contentType)
        guard let text = fields["text"]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            throw .badRequest("type a timer or an alarm, e.g. '10m Tea' or '07:00 weekdays Work'")
        }
        guard known.isOnline else { throw unreachable(node, known) }
        return text
    }

    /// The fields of a body sent as `application/x-www-form-urlencoded` or as a JSON object of strings.
    public static func formFields(_ body: Data, contentType: String?) throws(CompanionError) -> [String: String] {
        let type = contentType?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        switch type {
        case "application/json":
            guard let fields = try? JSONDecoder().decode([String: String].self, from: body) else {
                throw .badRequest("the body is not a JSON object of strings, e.g. {\"text\":\"10m Tea\"}")
            }
            return fields
        case "application/x-www-form-urlencoded":
            guard let text = String(data: body, encoding: .utf8) else { throw .badRequest("the form is not UTF-8 text") }
            var fields: [String: String] = [:]
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = decodeFormComponent(parts[0]),
                      let value = decodeFormComponent(parts.count > 1 ? parts[1] : "") else {
                    throw .badRequest("the form is malformed (a bad %-escape)")
                }
                fields[name] = value
            }
            return fields
        default:
            throw .badRequest("send the body as application/x-www-form-urlencoded or application/json")
        }
    }

    private static func decodeFormComponent(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    private static func unreachable(_ node: String, _ known: KnownNode) -> CompanionError {
        CompanionError(code: "unavailable", status: .serviceUnavailable, message: known.brokerLost
            ? "the companion has lost its connection to the broker, so node '\(node)' cannot be reached: check that the broker runs, then try again"
            : "node '\(node)' is offline: start alarmd on it, then try again")
    }
}
