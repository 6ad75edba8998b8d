import AlarmKit
import Foundation
import MosquittoTestSupport
import Testing

/// The broker's load with a fleet: 100 real alarmd of 100 alarms each, idle, on one mosquitto.
/// Reported for docs/fleet.md, with no goal; about 3 minutes and 3.5 GB, so it runs only with
/// ALARMD_FLEET_TEST=1 (SKIPPED line otherwise).
@Suite("Fleet load on the broker", .serialized, .timeLimit(.minutes(10)))
struct FleetLoadTests {
    /// utime + stime of `pid` in seconds, and its VmRSS in KiB.
    private func usage(of pid: Int32) -> (cpu: Double, residentKiB: Int)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based, counting pid and comm).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        return ((user + system) / Double(sysconf(Int32(_SC_CLK_TCK))), rss ?? 0)
    }

    @Test("100 idle nodes of 100 alarms: every node online and every document retained; the broker's CPU and memory reported")
    func hundredIdleNodes() async throws {
        guard ProcessInfo.processInfo.environment["ALARMD_FLEET_TEST"] != nil else {
            print("SKIPPED fleet load test: set ALARMD_FLEET_TEST=1 to run it (100 alarmd processes, about 3 minutes and 3.5 GB)")
            return
        }
        let nodes = 100, alarmsPerNode = 100
        try await TestBroker.withBroker { broker in
            let brokerPID = try #require(broker.processIdentifier)
            let idleBefore = try #require(usage(of: brokerPID))
            var daemons: [DaemonProcess] = []
            do {
                let due = Date().addingTimeInterval(30 * 86_400)
                let attributes = AlarmAttributes<JSONValue>(presentation: AlarmPresentation(alert: .init(title: "Fleet")), tintColor: .blue)
                for index in 0..<nodes {
                    let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-fleet-\(UUID().uuidString)")
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let records = (0..<alarmsPerNode).map { offset in
                        AlarmRecord(id: UUID(), configuration: .alarm(schedule: .fixed(due.addingTimeInterval(Double(offset * 60))), attributes: attributes),
                                    phase: .scheduled(alertDate: due.addingTimeInterval(Double(offset * 60))))
                    }
                    try writeState(NodeState(authorization: .authorized, alarms: records), to: directory)
                    daemons.append(try await DaemonProcess.start(broker: broker, node: "fleet-\(index)", stateDirectory: directory,
                                                                 arguments: ["--group", "fleet"]))
                }
                let retained = try await withTestClients { clients in
                    // Wait for every node online, then count every retained document once.
                    let (observer, events) = try clients.start(broker.clientConfiguration(clientID: "fleet-observer", keepAlive: 60), subscribing: ["alarmd/+/status"])
                    try await events.connected()
                    var online = Set<String>()
                    _ = try await events.messages(on: "alarmd/+/status", within: .seconds(300)) { message in
                        if String(decoding: message.payload, as: UTF8.self).contains("\"online\"") { online.insert(message.topic) }
                        return online.count == nodes
                    }
                    try await Task.sleep(for: .seconds(5))
                    // QoS 0: mosquitto queues at most 1000 QoS 1 messages for a client (max_queued_messages).
                    try observer.subscribe("alarmd/+/alarms/+", qos: 0)
                    var documents = Set<String>()
                    _ = try await events.messages(on: "alarmd/+/alarms/+", within: .seconds(120)) { message in
                        if message.retain, !message.payload.isEmpty { documents.insert(message.topic) }
                        return documents.count == nodes * alarmsPerNode
                    }
                    return documents.count
                }
                #expect(retained == nodes * alarmsPerNode)
                // Idle: nothing falls due for a month; only keepalives and nothing else.
                let start = try #require(usage(of: brokerPID))
                let measured: Duration = .seconds(60)
                try await Task.sleep(for: measured)
                let end = try #require(usage(of: brokerPID))
                let cpuPercent = (end.cpu - start.cpu) / 60 * 100
                let alarmdRSS = daemons.compactMap(\.residentKilobytes)
                print("FLEET \(nodes) idle nodes x \(alarmsPerNode) alarms on mosquitto: broker RSS \(idleBefore.residentKiB) KiB empty, "
                    + "\(end.residentKiB) KiB with the fleet; broker CPU \(String(format: "%.2f", end.cpu - start.cpu)) s over 60 s idle "
                    + "(\(String(format: "%.2f", cpuPercent)) % of one core); alarmd RSS each (debug build) median "
                    + "\(alarmdRSS.sorted()[alarmdRSS.count / 2]) KiB")
                #expect(end.residentKiB > idleBefore.residentKiB)
                for daemon in daemons { await daemon.cleanUp() }
                for daemon in daemons { try? FileManager.default.removeItem(at: daemon.stateDirectory) }
            } catch {
                for daemon in daemons { await daemon.cleanUp() }
                for daemon in daemons { try? FileManager.default.removeItem(at: daemon.stateDirectory) }
                throw error
            }
        }
    }
}
