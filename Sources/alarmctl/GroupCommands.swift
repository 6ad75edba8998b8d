import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

extension ConnectionOptions {
    /// `--group`: sends `requests` to the group, prints every member's answer (and the members that
    /// stayed silent), and returns what should set the exit status: a member's failure, or a
    /// silent member (see ``GroupReport/failure(ignoringNotFound:)``).
    ///
    /// - Parameter ignoringNotFound: for operations on alarms some members do not hold.
    func onGroup(
        _ name: String, output: OutputOptions, ignoringNotFound: Bool = false,
        _ requests: @escaping (RemoteGroup) async throws(AlarmNodeError) -> [(alarmID: UUID?, replies: RemoteGroup.Replies)]
    ) async throws(AlarmctlError) -> AlarmctlError? {
        let report = try await withGroup(name) { group throws(AlarmctlError) in
            var report = GroupReport(group: name)
            do {
                for request in try await requests(group) { report.add(request.replies, alarmID: request.alarmID) }
            } catch {
                throw AlarmctlError(NodeFailure(error))
            }
            report.memberTimeZones = group.members.compactMapValues { $0.timeZone.flatMap(TimeZone.init(identifier:)) }
            return report
        }
        output.print(report.text(now: Date(), timeZone: .current, ignoringNotFound: ignoringNotFound), json: report.json)
        return report.failure(ignoringNotFound: ignoringNotFound)
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
    /// targets, then each operation goes to the group; a member that does not hold an alarm is left out.
    func runOnGroup(_ name: String, _ operation: AlarmOperation) async throws {
        var failure: AlarmctlError?
        try await output.run { () async throws(AlarmctlError) in
            let ids = self.ids, all = self.all
            // Resolved before the requests, so that a bad id is a usage error, not a member's answer.
            let targets = try await connection.withGroup(name) { group throws(AlarmctlError) -> [UUID] in
                let documents: [AlarmDocument]
                do {
                    documents = GroupReport.documents(of: try await group.list())
                } catch {
                    throw AlarmctlError(NodeFailure(error))
                }
                return try (all ? AlarmSelection.all(for: operation, among: documents) : AlarmSelection.resolve(ids, among: documents)).map(\.id)
            }
            if targets.isEmpty {
                output.print("no alarm to \(operation == .countdown ? "snooze" : operation.rawValue) in group \(name)",
                             json: JSONValue.object(["group": .string(name), "requests": .array([])]))
                return
            }
            failure = try await connection.onGroup(name, output: output, ignoringNotFound: true) { group throws(AlarmNodeError) in
                var requests: [(alarmID: UUID?, replies: RemoteGroup.Replies)] = []
                for id in targets { requests.append((id, try await group.perform(operation, id: id))) }
                return requests
            }
        }
        try exitForGroup(failure)
    }
}
