import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

extension ConnectionOptions {
    /// `--group`: sends `requests` to the group, prints every member's answer (and the members that
    /// stayed silent), and returns what should set the exit status: a member's failure, or a
    /// silent member (see ``GroupReport/failure()``).
    ///
    /// - Parameters:
    ///   - titles: the alarms' titles, to name each request's alarm.
    ///   - nothingToDo: the refusals that only mean a member has nothing to do (``GroupReport/nothingToDo``).
    func onGroup(
        _ name: String, output: OutputOptions, titles: [UUID: String] = [:], nothingToDo: Set<NodeFailure.Code> = [],
        _ requests: @escaping (RemoteGroup) async throws(AlarmNodeError) -> [(alarmID: UUID?, replies: RemoteGroup.Replies)]
    ) async throws(AlarmctlError) -> AlarmctlError? {
        let report = try await withGroup(name) { group throws(AlarmctlError) in
            var report = GroupReport(group: name)
            (report.titles, report.nothingToDo) = (titles, nothingToDo)
            do {
                for request in try await requests(group) { report.add(request.replies, alarmID: request.alarmID) }
            } catch {
                throw AlarmctlError(NodeFailure(error))
            }
            report.memberTimeZones = group.members.compactMapValues { $0.timeZone.flatMap(TimeZone.init(identifier:)) }
            return report
        }
        output.print(report.text(now: Date(), timeZone: .current), json: report.json)
        return report.failure()
    }
}

/// Ends a `--group` command with the exit status of what went wrong, said on standard error.
func exitForGroup(_ failure: AlarmctlError?) throws {
    guard let failure else { return }
    Terminal.printError("alarmctl: \(failure.message)")
    throw ExitCode(failure.exitStatus.rawValue)
}

extension OperationTarget {
    /// `stop`, `cancel`… with `--group`: the members' alarms (a `list` to the group) pick the
    /// targets, then each operation goes to the group; a member that does not hold an alarm has
    /// nothing to do. `--all` means the group's alarms (scheduled through it), never a member's own,
    /// in the state the operation needs on any member (a member where it is not has nothing to do).
    func runOnGroup(_ name: String, _ operation: AlarmOperation) async throws {
        var failure: AlarmctlError?
        try await output.run { () async throws(AlarmctlError) in
            let ids = self.ids, all = self.all
            // Resolved before the requests, so that a bad id is a usage error, not a member's answer.
            let targets = try await connection.withGroup(name) { group throws(AlarmctlError) -> [AlarmDocument] in
                let replies: RemoteGroup.Replies
                do {
                    replies = try await group.list()
                } catch {
                    throw AlarmctlError(NodeFailure(error))
                }
                guard all else { return try AlarmSelection.resolve(ids, among: GroupReport.documents(of: replies)) }
                let eachMembers = GroupReport.documents(of: replies, eachMember: true).filter { $0.group == name }
                let wanted = Set(AlarmSelection.all(for: operation, among: eachMembers).map(\.id))
                return GroupReport.documents(of: replies).filter { wanted.contains($0.id) }
            }
            if targets.isEmpty {
                output.print("no alarm to \(operation == .countdown ? "snooze" : operation.rawValue) in group \(name)",
                             json: JSONValue.object(["group": .string(name), "requests": .array([])]))
                return
            }
            let titles = Dictionary(targets.map { ($0.id, AlarmText.title(of: $0)) }) { first, _ in first }
            failure = try await connection.onGroup(name, output: output, titles: titles,
                                                   nothingToDo: all ? [.notFound, .invalidState] : [.notFound]) { group throws(AlarmNodeError) in
                var requests: [(alarmID: UUID?, replies: RemoteGroup.Replies)] = []
                for target in targets { requests.append((target.id, try await group.perform(operation, id: target.id))) }
                return requests
            }
        }
        try exitForGroup(failure)
    }
}
