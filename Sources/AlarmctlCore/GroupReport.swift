import AlarmKit
import Foundation
import Logging

extension RemoteGroup {
    /// The group for `alarmctl --group`: like a node's session, it writes the MQTT client's log
    /// to standard error only with `--verbose`, so that the members' answers stand alone.
    public static func forAlarmctl(_ group: String, settings: RemoteNodeSettings, verbose: Bool) -> RemoteGroup {
        RemoteGroup(settings: settings, group: group, logger: Logger(label: "alarmctl") { label in
            verbose ? StreamLogHandler.standardError(label: label) as any LogHandler : SwiftLogNoOpLogHandler()
        })
    }
}

/// What `alarmctl --group <name> …` prints for the replies of a group's members: one line per
/// member that answered (its result), one per known member that stayed silent, and with `--json`
/// `{"group":…,"answered":[{"node":…,"ok":…,…}],"silent":[{"node":…,"status":{…}}]}` (and `"id"` for an operation on one alarm), with
/// `"membersKnown":false` when the broker gave no member's status, `"nothingToDo":true` on such a reply.
public struct GroupReport: Sendable {
    public let group: String
    /// One entry per request sent to the group (a schedule or list: one; `stop --all`: one per alarm).
    public private(set) var requests: [(alarmID: UUID?, replies: RemoteGroup.Replies)] = []
    /// The members' time zones, from their statuses: each member's times are shown in its own.
    public var memberTimeZones: [String: TimeZone] = [:]
    /// The titles of the alarms operated on, to name each request's alarm in the text.
    public var titles: [UUID: String] = [:]
    /// The refusals that only mean a member has nothing to do (`notFound`; `invalidState` too for
    /// `--all`, or where another member carried the operation out): no failure, "nothing to do".
    public var nothingToDo: Set<NodeFailure.Code> = []
    /// The requests schedule: a member that has not authorized scheduling waits for its buttons.
    public var schedules = false

    public init(group: String) { self.group = group }

    public mutating func add(_ replies: RemoteGroup.Replies, alarmID: UUID? = nil) { requests.append((alarmID, replies)) }

    /// The first failure a member answered (but those in ``nothingToDo``), or a silent member
    /// (unreachable); nil when every known member answered and succeeded.
    public func failure() -> AlarmctlError? {
        for request in requests {
            for case .failure(let failure) in request.replies.answered.map(\.reply) where !isNothingToDo(failure, in: request.replies) {
                return AlarmctlError(failure)
            }
        }
        if requests.contains(where: { $0.replies.answered.isEmpty && $0.replies.silent.isEmpty }) {
            return .unreachable("no member of group '\(group)' answered, and no node lists it in its status: "
                + "check the group name (--group) and that its members run alarmd with node.groups including it")
        }
        if let (node, status) = requests.lazy.flatMap({ $0.replies.silent.sorted { $0.key < $1.key } }).first {
            return .unreachable("node '\(node)' of group '\(group)' did not answer\(promptHint(status))")
        }
        return nil
    }

    /// Every member's alarms from a `list`, to resolve ids and titles against: without repeats (a
    /// group alarm is held by every member), or `eachMember`'s own copy, whose state may differ.
    public static func documents(of replies: RemoteGroup.Replies, eachMember: Bool = false) -> [AlarmDocument] {
        var seen = Set<UUID>()
        return replies.answered.flatMap { member -> [AlarmDocument] in
            if case .alarms(let documents) = member.reply { documents } else { [] }
        }.filter { eachMember || seen.insert($0.id).inserted }
    }

    /// The text: per request, the alarm's id and title when known, `<node>  <result>` for each
    /// member, then the silent ones. Times are in the member's zone, or `timeZone` when it is not known.
    public func text(now: Date, timeZone: TimeZone) -> String {
        var lines: [String] = []
        let shortIDs = AlarmSelection.shortIDs(requests.compactMap(\.alarmID))
        for request in requests {
            if let id = request.alarmID, let title = titles[id] { lines.append("\(shortIDs[id] ?? id.uuidString) \"\(title)\":") }
            let width = (request.replies.answered.map(\.node) + request.replies.silent.keys).map(\.count).max() ?? 0
            for member in request.replies.answered {
                lines.append("\(pad(member.node, to: width))  \(describe(member.reply, in: request.replies, now: now, timeZone: memberTimeZones[member.node] ?? timeZone))")
            }
            for (node, status) in request.replies.silent.sorted(by: { $0.key < $1.key }) {
                lines.append("\(pad(node, to: width))  no answer (\(status.stateDescription))\(promptHint(status))")
            }
        }
        let answered = Set(requests.flatMap { $0.replies.answered.map(\.node) })
        let silent = Set(requests.flatMap { $0.replies.silent.keys }).subtracting(answered)
        // A broker that keeps no retained message for a wildcard subscription (RabbitMQ 3.10) gives
        // no member's status: the members that did not answer are then not known.
        let unknown = requests.contains { !$0.replies.membersKnown }
            ? " (members not known: the broker sent no node's retained status, so one that is offline cannot be named)" : ""
        // Members in several zones: one alarm at 07:00 in each reads as two times unless the zones are named.
        let zones = answered.sorted().map { ($0, (memberTimeZones[$0] ?? timeZone).identifier) }
        let zoneNote = Set(zones.map(\.1)).count > 1 ? "; times in each member's zone: " + zones.map { "\($0) \($1)" }.joined(separator: ", ") : ""
        lines.insert("group \(group): \(answered.count) answered, \(silent.count) silent\(unknown)\(zoneNote)", at: 0)
        // An offline member misses a change for good; one online but silent (asking for authorization,
        // slow) still applies it, so running it again would make a second alarm there.
        let offline = requests.contains { $0.replies.silent.values.contains { !$0.isOnline } }
        if offline, schedules || !titles.isEmpty {
            let id = requests.lazy.flatMap(\.replies.answered).compactMap { if case .alarm(let document?) = $0.reply { document.id } else { nil } }.first
            lines.append("an offline member misses this command (the broker keeps none for it): once it is back, run it again"
                + (schedules ? id.map { " with --id \($0.uuidString) (the members that hold it keep it unchanged)" } ?? "" : ""))
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON value `--json` prints.
    public var json: JSONValue {
        func replies(_ replies: RemoteGroup.Replies) -> [String: JSONValue] {
            [
                "answered": .array(replies.answered.map { member in
                    var object = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(member.reply.payload()))) ?? [:]
                    object["node"] = .string(member.node)
                    if case .failure(let failure) = member.reply, isNothingToDo(failure, in: replies) { object["nothingToDo"] = .bool(true) }
                    return .object(object)
                }),
                "silent": .array(replies.silent.sorted { $0.key < $1.key }.map { node, status in
                    .object(["node": .string(node), "status": (try? JSONValue(encoding: status)) ?? .null])
                }),
            ]
        }
        var object: [String: JSONValue] = ["group": .string(group)]
        if requests.contains(where: { !$0.replies.membersKnown }) { object["membersKnown"] = .bool(false) }
        if requests.count == 1, let only = requests.first {
            object.merge(replies(only.replies)) { $1 }
            // An operation's alarm, which a member that removed it answers with no document.
            if let id = only.alarmID { object["id"] = .string(id.uuidString) }
        } else {
            object["requests"] = .array(requests.map { request in
                var entry = replies(request.replies)
                entry["id"] = request.alarmID.map { .string($0.uuidString) } ?? .null
                return .object(entry)
            })
        }
        return .object(object)
    }

    private func isNothingToDo(_ failure: NodeFailure, in replies: RemoteGroup.Replies) -> Bool {
        nothingToDo.contains(failure.code)
            || failure.code == .invalidState && replies.answered.contains { if case .failure = $0.reply { false } else { true } }
    }

    /// Why an online member whose authorization is undetermined is silent on a schedule: it waits
    /// for a press of its buttons.
    private func promptHint(_ status: NodeStatus) -> String {
        guard schedules, status.isOnline, status.authorization == .notDetermined else { return "" }
        return ": it asks for authorization first: press its stop button now: it waits \(Int(status.promptSeconds)) s from the command's arrival (a long press on a single-button board)"
    }

    private func describe(_ reply: NodeReply, in replies: RemoteGroup.Replies, now: Date, timeZone: TimeZone) -> String {
        switch reply {
        case .alarm(let document?): Rendering.summary(document, now: now, timeZone: timeZone)
        case .alarm(nil): "done (the alarm was removed)"
        case .alarms(let documents): documents.isEmpty ? "no alarms" : "\(documents.count) alarm\(documents.count == 1 ? "" : "s"): "
            + Rendering.displayOrder(documents, now: now).map { Rendering.summary($0, now: now, timeZone: timeZone) }.joined(separator: "; ")
        case .authorization(let state): "authorization: \(state.rawValue)"
        case .failure(let failure) where isNothingToDo(failure, in: replies):
            "nothing to do (\(failure.code == .notFound ? "it does not hold this alarm" : failure.message))"
        case .failure(let failure): "error \(failure.code.rawValue): \(failure.message)"
        }
    }
}
