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
/// `{"group":…,"answered":[{"node":…,"ok":…,…}],"silent":[{"node":…,"status":{…}}]}`.
public struct GroupReport: Sendable {
    public let group: String
    /// One entry per request sent to the group (a schedule or list: one; `stop --all`: one per alarm).
    public private(set) var requests: [(alarmID: UUID?, replies: RemoteGroup.Replies)] = []
    /// The members' time zones, from their statuses: each member's times are shown in its own.
    public var memberTimeZones: [String: TimeZone] = [:]

    public init(group: String) { self.group = group }

    public mutating func add(_ replies: RemoteGroup.Replies, alarmID: UUID? = nil) { requests.append((alarmID, replies)) }

    /// The first failure a member answered, or a silent member (unreachable); nil when every known
    /// member answered and succeeded. `notFound` for an alarm the member does not hold is no failure
    /// when `ignoringNotFound` (an operation on every alarm of the group).
    public func failure(ignoringNotFound: Bool = false) -> AlarmctlError? {
        for request in requests {
            for member in request.replies.answered {
                guard case .failure(let failure) = member.reply else { continue }
                if ignoringNotFound, failure.code == .notFound { continue }
                return AlarmctlError(failure)
            }
        }
        if requests.contains(where: { $0.replies.answered.isEmpty && $0.replies.silent.isEmpty }) {
            return .unreachable("no member of group '\(group)' answered, and no node lists it in its status: "
                + "check the group name (--group) and that its members run alarmd with node.groups including it")
        }
        if let silent = requests.lazy.flatMap({ $0.replies.silent.keys }).first {
            return .unreachable("node '\(silent)' of group '\(group)' did not answer")
        }
        return nil
    }

    /// Every member's alarms from a `list`, without repeats (a group alarm is held by every member),
    /// to resolve ids and titles against.
    public static func documents(of replies: RemoteGroup.Replies) -> [AlarmDocument] {
        var seen = Set<UUID>()
        return replies.answered.flatMap { member -> [AlarmDocument] in
            guard case .alarms(let documents) = member.reply else { return [] }
            return documents
        }.filter { seen.insert($0.id).inserted }
    }

    /// The text: per request, `<node>  <result>` for each member, then the silent ones. Times are
    /// in the member's zone, or `timeZone` when it is not known.
    public func text(now: Date, timeZone: TimeZone, ignoringNotFound: Bool = false) -> String {
        var lines: [String] = []
        for request in requests {
            let width = (request.replies.answered.map(\.node) + request.replies.silent.keys).map(\.count).max() ?? 0
            for member in request.replies.answered {
                if ignoringNotFound, case .failure(let failure) = member.reply, failure.code == .notFound { continue }
                lines.append("\(pad(member.node, to: width))  \(Self.describe(member.reply, now: now, timeZone: memberTimeZones[member.node] ?? timeZone))")
            }
            for (node, status) in request.replies.silent.sorted(by: { $0.key < $1.key }) {
                lines.append("\(pad(node, to: width))  no answer (\(status.stateDescription))")
            }
        }
        let answered = Set(requests.flatMap { $0.replies.answered.map(\.node) })
        let silent = Set(requests.flatMap { $0.replies.silent.keys }).subtracting(answered)
        lines.insert("group \(group): \(answered.count) answered, \(silent.count) silent", at: 0)
        return lines.joined(separator: "\n")
    }

    /// The JSON value `--json` prints.
    public var json: JSONValue {
        func replies(_ replies: RemoteGroup.Replies) -> [String: JSONValue] {
            [
                "answered": .array(replies.answered.map { member in
                    var object = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(member.reply.payload()))) ?? [:]
                    object["node"] = .string(member.node)
                    return .object(object)
                }),
                "silent": .array(replies.silent.sorted { $0.key < $1.key }.map { node, status in
                    .object(["node": .string(node), "status": (try? JSONValue(encoding: status)) ?? .null])
                }),
            ]
        }
        var object: [String: JSONValue] = ["group": .string(group)]
        if requests.count == 1, let only = requests.first {
            object.merge(replies(only.replies)) { $1 }
        } else {
            object["requests"] = .array(requests.map { request in
                var entry = replies(request.replies)
                entry["id"] = request.alarmID.map { .string($0.uuidString) } ?? .null
                return .object(entry)
            })
        }
        return .object(object)
    }

    private static func describe(_ reply: NodeReply, now: Date, timeZone: TimeZone) -> String {
        switch reply {
        case .alarm(let document?): Rendering.summary(document, now: now, timeZone: timeZone)
        case .alarm(nil): "done (the alarm was removed)"
        case .alarms(let documents): documents.isEmpty ? "no alarms" : "\(documents.count) alarm\(documents.count == 1 ? "" : "s"): "
            + Rendering.displayOrder(documents, now: now).map { Rendering.summary($0, now: now, timeZone: timeZone) }.joined(separator: "; ")
        case .authorization(let state): "authorization: \(state.rawValue)"
        case .failure(let failure): "error \(failure.code.rawValue): \(failure.message)"
        }
    }
}
