import AlarmKit
import AlarmNode
import Foundation
import Logging
import MosquittoTestSupport
import Testing

/// The real alarmd with its state directory on a 256 KiB tmpfs that fills up during a storm of
/// schedules (docs/reliability.md). Needs root to mount the tmpfs; prints a SKIPPED line otherwise.
@Suite("alarmd on a full disk", .serialized, .timeLimit(.minutes(3)))
struct FullDiskTests {
    @Test("A disk filling mid-storm: acknowledged alarms ring, what cannot be saved is answered internal naming the disk, no unreadable file, recovery by itself")
    func diskFillsMidStorm() async throws {
        guard geteuid() == 0 else {
            print("SKIPPED FullDiskTests.diskFillsMidStorm: mounting a tmpfs needs root")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "alarmd-fulldisk-\(UUID().uuidString)")
        let disk = directory.appending(path: "state")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard mount("tmpfs", disk.path, "tmpfs", 0, "size=256k,mode=0700") == 0 else {
            print("SKIPPED FullDiskTests.diskFillsMidStorm: cannot mount a tmpfs here (\(String(cString: strerror(errno))))")
            return
        }
        defer { umount(disk.path) }
        // The log stays in `directory`; only the state is on the small disk.
        let node = "node-\(UUID().uuidString.prefix(8))"
        let arguments = ["--state-dir", disk.path, "--max-alarms", "1000"]
        // Metadata makes each alarm's file about 3 KiB, so the storm fills what the filler leaves.
        let metadata = JSONValue.object(["note": .string(String(repeating: "x", count: 3000))])
        func stormConfiguration(_ index: Int) -> JSONValue {
            guard case .object(var configuration) = configurationJSON(preAlert: 3600, title: "Storm \(index)"),
                  case .object(var attributes)? = configuration["attributes"] else { return .null }
            attributes["metadata"] = metadata
            configuration["attributes"] = .object(attributes)
            return .object(configuration)
        }

        var acknowledged: [UUID] = []
        var refusedMessages: [String] = []
        try await TestBroker.withBroker { broker in
            try await withDaemonProcess(broker: broker, node: node, stateDirectory: directory, arguments: arguments) { daemon in
                try await withTestClients { clients in
                    let client = try await NodeClient.connect(broker: broker, node: node, clients: clients)
                    try await client.waitForMessage("the node online") {
                        $0.topic == client.topics.status && NodeClient.object($0.payload)?["state"] == .string("online")
                    }
                    // An acknowledged timer that falls due while the disk is full.
                    let ringer = try await client.request("schedule", ["configuration": configurationJSON(preAlert: 6, title: "Ringer")])
                    let ringerID = try #require(Self.alarmID(in: ringer))
                    acknowledged.append(ringerID)
                    // Leave about 50 KiB free: the storm fills the rest (each file takes a 4 KiB page).
                    let filler = disk.appending(path: "filler")
                    try Data(count: 200 * 1024).write(to: filler)

                    for index in 0..<Self.stormSize {
                        let reply = try await client.request("schedule", ["configuration": stormConfiguration(index)])
                        if let id = Self.alarmID(in: reply) {
                            acknowledged.append(id)
                        } else if case .string(let message)? = reply["error"]?["message"] {
                            #expect(reply["error"]?["code"] == .string("internal"), "\(reply)")
                            refusedMessages.append(message)
                        } else {
                            Issue.record("neither an alarm nor an error: \(reply)")
                        }
                    }
                    print("FullDiskTests: \(acknowledged.count - 1) of \(Self.stormSize) schedules acknowledged, \(refusedMessages.count) answered internal, e.g. \(refusedMessages.first ?? "-")")
                    #expect(acknowledged.count > 1, "the disk was full before the storm: nothing to test")
                    #expect(!refusedMessages.isEmpty, "the disk never filled: nothing to test")
                    for message in refusedMessages {
                        #expect(message.contains("the disk is full") && message.contains(disk.path), "\(message)")
                    }

                    // The acknowledged timer rings though nothing more can be written.
                    _ = try await client.event("alerting", alarmID: ringerID, within: .seconds(15))
                    try await daemon.waitForLog("state not saved")
                    #expect(daemon.isRunning)

                    // Space again: the node saves what was left unsaved by itself, with no command.
                    try FileManager.default.removeItem(at: filler)
                    try await daemon.waitForLog("state saved after a failed write", within: .seconds(15))
                    let after = try await client.request("schedule", ["configuration": configurationJSON(preAlert: 3600, title: "After")])
                    acknowledged.append(try #require(Self.alarmID(in: after), "\(after)"))
                }
                // As a power cut would: no goodbye, nothing flushed.
                await daemon.kill()
            }
        }
        // Every file is readable, and every acknowledged alarm is on disk: the ringer as alerting.
        let store = StateStore(directory: disk.path, logger: Logger(label: "test"))
        let loaded = try store.load()
        #expect(loaded.problem == nil, "\(loaded.problem ?? "")")
        let saved = Dictionary(uniqueKeysWithValues: loaded.state.alarms.map { ($0.id, $0) })
        for id in acknowledged {
            #expect(saved[id] != nil, "acknowledged alarm \(id) is not on disk")
        }
        #expect(saved[acknowledged[0]]?.state == .alerting, "the ringer's alert was saved once there was space")
        // What was answered internal was in effect, and is saved too.
        #expect(saved.count == 1 + Self.stormSize + 1, "\(saved.count) alarms on disk")
    }

    /// Schedules in the storm: their files fit the disk once the filler is gone.
    static let stormSize = 40

    static func alarmID(in reply: [String: JSONValue]) -> UUID? {
        guard case .string(let text)? = reply["alarm"]?["id"] else { return nil }
        return UUID(uuidString: text)
    }
}
