import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

/// What a `--group` command sends: one request, or one per alarm, each with the members' replies.
typealias GroupRequests = (RemoteGroup) async throws(AlarmNodeError) -> [(alarmID: UUID?, replies: RemoteGroup.Replies)]

extension ConnectionOptions {
    /// `--group`: sends `requests` to the group, prints every member's answer (and the members that
    /// stayed silent), and returns what should set the exit status: a member's failure, or a
    /// silent member (see ``GroupReport/failure()``).
    func onGroup(_ name: String, output: OutputOptions, schedules: Bool = false,
                 _ requests: @escaping GroupRequests) async throws(AlarmctlError) -> AlarmctlError? {
        try await withGroup(name) { group throws(AlarmctlError) in try await report(on: group, output: output, schedules: schedules, requests) }
    }

    /// ``onGroup(_:output:_:)`` on a group already in use (whose members answered before); `titles`
    /// name each request's alarm, `nothingToDo` as ``GroupReport/nothingToDo``.
    func report(on group: RemoteGroup, output: OutputOptions, titles: [UUID: String] = [:], nothingToDo: Set<NodeFailure.Code> = [],
                schedules: Bool = false, _ requests: @escaping GroupRequests) async throws(AlarmctlError) -> AlarmctlError? {
        var report = GroupReport(group: group.group)
        (report.titles, report.nothingToDo, report.schedules) = (titles, nothingToDo, schedules)
        for request in try await AlarmctlError.asking({ () async throws(AlarmNodeError) in try await requests(group) }) {
            report.add(request.replies, alarmID: request.alarmID)
        }
        report.memberTimeZones = group.members.compactMapValues { $0.timeZone.flatMap(TimeZone.init(identifier:)) }
        output.print(report.text(now: Date(), timeZone: .current), json: report.json)
        return report.failure()
    }
}

extension OperationTarget {
    /// `stop`, `cancel`… with `--group`: the members' alarms (a `list` to the group) pick the
    /// targets, then each operation goes to the group; a member that does not hold an alarm has
    /// nothing to do. `--all` means the group's alarms (scheduled through it), never a member's own,
    /// in the state the operation needs on any member (a member where it is not has nothing to do).
    func runOnGroup(_ name: String, _ operation: AlarmOperation) async throws {
        try await output.run { () async throws(AlarmctlError) in
            let ids = self.ids, all = self.all
            // One group for the list and the operations: with no member known from a retained status,
            // the operations await the members that answered the list.
            return try await connection.withGroup(name) { group throws(AlarmctlError) -> AlarmctlError? in
                let replies = try await AlarmctlError.asking { () async throws(AlarmNodeError) in try await group.list() }
                // Resolved before the requests, so that a bad id is a usage error, not a member's answer.
                let eachMembers = GroupReport.documents(of: replies, eachMember: true).filter { $0.group == name }
                let wanted = Set(AlarmSelection.all(for: operation, among: eachMembers).map(\.id)), documents = GroupReport.documents(of: replies)
                // A member that did not answer may hold what the others do not: never "nothing to do" then.
                let unheard = replies.silent.keys.min().map { AlarmctlError.unreachable("node '\($0)' of group '\(name)' did not answer") }
                let targets: [AlarmDocument]
                do throws(AlarmctlError) {
                    targets = all ? documents.filter { wanted.contains($0.id) }
                        : try AlarmSelection.resolve(ids, among: documents, listing: "alarmctl --group \(name) list", group: name)
                } catch {
                    guard case .notFound(let message) = error, let unheard else { throw error }
                    throw .unreachable("\(message); \(unheard.message), and may hold it")
                }
                if targets.isEmpty {
                    output.print("no alarm to \(operation == .countdown ? "snooze" : operation.rawValue) in group \(name)\(unheard == nil ? "" : " among the members that answered")",
                                 json: JSONValue.object(["group": .string(name), "requests": .array([])]))
                    return unheard
                }
                let titles = Dictionary(targets.map { ($0.id, AlarmText.title(of: $0)) }) { first, _ in first }
                return try await connection.report(on: group, output: output, titles: titles,
                                                   nothingToDo: all ? [.notFound, .invalidState] : [.notFound]) { group throws(AlarmNodeError) in
                    var requests: [(alarmID: UUID?, replies: RemoteGroup.Replies)] = []
                    for target in targets { requests.append((target.id, try await group.perform(operation, id: target.id))) }
                    return requests
                }
            }
        }
    }
}
