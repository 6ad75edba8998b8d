import AlarmKit
@testable import AlarmNode
import Foundation
import Glibc
import Logging
import Testing

@Suite("State store: one file per alarm")
struct StateStoreTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let logger = Logger(label: "test.state-store")

    /// Runs `body` with an empty folder that is removed afterwards.
    func withFolder(_ body: (String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alarmd-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder.path)
    }

    /// An engine with `count` timers.
    func engine(timers count: Int, title: String = "Tea") throws -> AlarmEngine {
        var engine = AlarmEngine()
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(
            title: .init(stringLiteral: title))), tintColor: .blue)
        for _ in 0..<count {
            _ = try engine.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes), now: now)
        }
        return engine
    }

    func state(_ engine: AlarmEngine, _ authorization: AlarmManager.AuthorizationState = .authorized) -> NodeState {
        NodeState(authorization: authorization, alarms: Array(engine.records.values))
    }

    /// The state as the node hands it to its writer: naming the alarms changed since the last one.
    func changes(_ engine: inout AlarmEngine) -> NodeState {
        NodeState(authorization: .authorized, alarms: Array(engine.records.values), changedAlarms: engine.takeChangedAlarms())
    }

    /// The state a new store (a restarted node) reads from `folder`, its alarms by id.
    func reload(_ folder: String) throws -> (alarms: [UUID: AlarmRecord], authorization: AlarmManager.AuthorizationState, problem: String?) {
        let loaded = try StateStore(directory: folder, logger: Self.logger).load()
        return (Dictionary(uniqueKeysWithValues: loaded.state.alarms.map { ($0.id, $0) }), loaded.state.authorization, loaded.problem)
    }

    /// Loads a store on `folder` and runs `body` with it; the store, and its lock, are gone after.
    func withStore<Result>(_ folder: String, _ body: (StateStore) throws -> Result) throws -> Result {
        let store = StateStore(directory: folder, logger: Self.logger)
        _ = try store.load()
        return try body(store)
    }

    func byID(_ engine: AlarmEngine) -> [UUID: AlarmRecord] {
        Dictionary(uniqueKeysWithValues: engine.records.map { ($0.key, $0.value) })
    }

    /// Every file under `folder` and its contents.
    func files(_ folder: String) throws -> [String: Data] {
        var contents: [String: Data] = [:]
        for name in try FileManager.default.subpathsOfDirectory(atPath: folder) where name.hasSuffix(".json") {
            contents[name] = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)"))
        }
        return contents
    }

    @Test func aChangeRewritesOnlyItsAlarmsFileAndSurvivesARestart() throws {
        try withFolder { folder in
            var engine = try engine(timers: 3)
            let paused = try #require(engine.records.keys.first)
            let (before, after) = try withStore(folder) { store in
                try store.save(state(engine))
                let before = try files(folder)
                _ = try engine.pause(id: paused, now: now + 30)
                try store.save(state(engine))
                return (before, try files(folder))
            }
            #expect(before.count == 4, "three alarms and node.json")
            #expect(Set(after.keys) == Set(before.keys))
            #expect(after.filter { before[$0.key] != $0.value }.map(\.key) == ["alarms/\(paused.uuidString).json"])

            let restored = try reload(folder)
            #expect(restored.alarms == byID(engine))
            #expect(restored.authorization == .authorized)
            #expect(restored.problem == nil)
        }
    }

    @Test func aRestartedNodeHoldsItsAlarmsSoonestFirstThenByID() throws {
        try withFolder { folder in
            var engine = AlarmEngine()
            let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
            // Scheduled longest first, ids in no order: six 10-minute timers, six 1-minute ones and
            // one paused. Six per tie group: ties in any order but the ids' would pass once in 720².
            let durations = Array(repeating: 600.0, count: 6) + Array(repeating: 60.0, count: 7)
            let ids = durations.map { _ in UUID() }
            for (id, duration) in zip(ids, durations) {
                _ = try engine.schedule(id: id, configuration: .timer(duration: duration, attributes: attributes), now: now)
            }
            _ = try engine.pause(id: ids[6], now: now)
            try withStore(folder) { try $0.save(state(engine)) }

            let loaded = try StateStore(directory: folder, logger: Self.logger).load().state.alarms.map(\.id)
            let byText = { (ids: ArraySlice<UUID>) in ids.sorted { $0.uuidString < $1.uuidString } }
            #expect(loaded == byText(ids[7...12]) + byText(ids[0...5]) + [ids[6]])
        }
    }

    @Test func aRemovedAlarmLosesItsFileAndTheDecisionAndZoneAreKept() throws {
        try withFolder { folder in
            var engine = try engine(timers: 2)
            let cancelled = try #require(engine.records.keys.first)
            try withStore(folder) { store in
                try store.save(state(engine))
                _ = try engine.cancel(id: cancelled, now: now + 1)
                var denied = state(engine, .denied)
                denied.timeZone = TimeZone(identifier: "Asia/Kolkata")
                try store.save(denied)
            }
            #expect(try files(folder)["alarms/\(cancelled.uuidString).json"] == nil)
            let restored = try reload(folder)
            #expect(restored.alarms == byID(engine))
            #expect(restored.authorization == .denied)
            let zone = try StateStore(directory: folder, logger: Self.logger).load().state.timeZone
            #expect(zone?.identifier == "Asia/Kolkata", "the zone the schedules were planned in")
        }
    }

    @Test func aSaveLooksOnlyAtTheAlarmsItsStateNames() throws {
        try withFolder { folder in
            var engine = try engine(timers: 3)
            let ids = Array(engine.records.keys)
            try withStore(folder) { store in
                try store.save(changes(&engine))
                #expect(try files(folder).count == 4)
                _ = try engine.pause(id: ids[0], now: now + 5)
                _ = try engine.cancel(id: ids[1], now: now + 5)
                let named = changes(&engine)
                #expect(named.changedAlarms == [ids[0], ids[1]])
                // Left out on purpose: a change the state does not name is not looked for.
                _ = try engine.pause(id: ids[2], now: now + 5)
                let before = try files(folder)
                try store.save(named)
                let after = try files(folder)
                #expect(after["alarms/\(ids[0].uuidString).json"] != before["alarms/\(ids[0].uuidString).json"])
                #expect(after["alarms/\(ids[1].uuidString).json"] == nil)
                #expect(after["alarms/\(ids[2].uuidString).json"] == before["alarms/\(ids[2].uuidString).json"])
                try store.save(changes(&engine))
            }
            #expect(try reload(folder).alarms == byID(engine))
        }
    }

    @Test func aDamagedAlarmFileIsKeptAsideAndTheOthersAreRead() throws {
        try withFolder { folder in
            var engine = try engine(timers: 2)
            try withStore(folder) { try $0.save(state(engine)) }
            let damaged = try #require(engine.records.keys.first)
            let path = "\(folder)/alarms/\(damaged.uuidString).json"
            try Data("{\"id\":".utf8).write(to: URL(fileURLWithPath: path))

            let restored = try reload(folder)
            _ = try engine.cancel(id: damaged, now: now)
            #expect(restored.alarms == byID(engine))
            #expect(restored.problem?.contains("\(damaged.uuidString).json is damaged") == true)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/alarms")
            let kept = try #require(names.first { $0.hasPrefix("\(damaged.uuidString).json.damaged-") })
            // A restart still says so in the status, until the file is removed; the damage itself
            // is not found again (reset-authorization refuses only on that).
            let again = try StateStore(directory: folder, logger: Self.logger).load()
            #expect(again.problem == nil && again.keptEarlier == ["\(folder)/alarms/\(kept)"])
            #expect(again.statusProblem?.contains("kept aside earlier are still there (\(folder)/alarms/\(kept))") == true)
            try FileManager.default.removeItem(atPath: "\(folder)/alarms/\(kept)")
            #expect(try StateStore(directory: folder, logger: Self.logger).load().statusProblem == nil)
        }
    }

    @Test("An alarm file holding values no command is accepted with is kept aside, not run", arguments: [
        ("\"totalCountdownDuration\":600", "\"totalCountdownDuration\":-5", "totalCountdownDuration: -5.0 is not a duration"),
        ("\"previouslyElapsedDuration\":0", "\"previouslyElapsedDuration\":700", "previouslyElapsedDuration: 700.0 is not a duration"),
        ("\"preAlert\":600", "\"preAlert\":-5", "configuration: configuration.countdownDuration.preAlert: -5.0 is not a duration"),
    ])
    func anAlarmFileWithImpossibleValuesIsKeptAside(found: String, replacement: String, reason: String) throws {
        try withFolder { folder in
            var engine = try engine(timers: 2)
            try withStore(folder) { try $0.save(state(engine)) }
            let damaged = try #require(engine.records.keys.first)
            let path = "\(folder)/alarms/\(damaged.uuidString).json"
            let contents = try String(contentsOfFile: path, encoding: .utf8)
            #expect(contents.contains(found))
            try contents.replacing(found, with: replacement).write(toFile: path, atomically: false, encoding: .utf8)

            let restored = try reload(folder)
            _ = try engine.cancel(id: damaged, now: now)
            #expect(restored.alarms == byID(engine))
            let problem = try #require(restored.problem)
            #expect(problem.contains("\(damaged.uuidString).json is damaged (\(reason)"), "\(problem)")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/alarms")
            #expect(names.contains { $0.hasPrefix("\(damaged.uuidString).json.damaged-") })
        }
    }

    @Test func everyPhaseRoundTrips() throws {
        var engine = AlarmEngine(configuration: .init(timeZone: TimeZone(identifier: "Europe/Berlin")!))
        let ids = (0..<6).map { _ in UUID() }
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(
            title: "Wake")), tintColor: .blue)
        _ = try engine.schedule(id: ids[0], configuration: .alarm(schedule: .relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday]))), attributes: attributes), now: now)
        _ = try engine.schedule(id: ids[1], configuration: .timer(duration: 60, attributes: attributes), now: now)
        _ = try engine.schedule(id: ids[2], configuration: .timer(duration: 120, attributes: attributes), now: now)
        _ = try engine.pause(id: ids[2], now: now + 30)
        _ = try engine.schedule(id: ids[3], configuration: .timer(duration: 30, attributes: attributes), now: now)
        _ = try engine.schedule(id: ids[4], configuration: .timer(duration: 10, attributes: attributes), now: now)
        _ = engine.advance(to: now + 40)
        _ = try engine.countdown(id: ids[4], now: now + 40)
        guard case .countdown(let snooze)? = engine.records[ids[4]]?.phase else { Issue.record("not snoozed"); return }
        #expect(snooze.isSnooze, "a snooze is told apart from a timer's own countdown, across restarts too")
        _ = try engine.schedule(id: ids[5], configuration: .timer(duration: 10, attributes: attributes), now: now + 30)
        _ = engine.advance(to: now + 40)
        _ = try engine.countdown(id: ids[5], now: now + 40)
        _ = try engine.pause(id: ids[5], now: now + 41)
        #expect(engine.records[ids[5]]?.phase == .paused(totalCountdownDuration: 10, previouslyElapsedDuration: 1, isSnooze: true), "a paused snooze too")
        #expect(Set(engine.records.values.map(\.state)) == Set(Alarm.State.allCases))
        for var record in engine.records.values {
            record.silenceSnoozed = record.id == ids[4]
            let decoded = try AlarmJSON.decoder.decode(StoredAlarm.self, from: AlarmJSON.encoder.encode(StoredAlarm(record)))
            #expect(decoded.record == record)
        }
    }

    @Test func aNewerLayoutIsRefused() throws {
        try withFolder { folder in
            try Data(#"{"authorization":"authorized","schemaVersion":99}"#.utf8).write(to: URL(fileURLWithPath: folder + "/node.json"))
            #expect(throws: StartupError.self) { try StateStore(directory: folder, logger: Self.logger).load() }
        }
    }

    @Test func aSecondStoreOnTheSameFolderIsRefusedWhileTheFirstHoldsIt() throws {
        try withFolder { folder in
            let first = StateStore(directory: folder, logger: Self.logger)
            _ = try first.load()
            #expect(throws: StartupError.self) { try StateStore(directory: folder, logger: Self.logger).load() }
            withExtendedLifetime(first) {}
        }
    }

    @Test func leftoverTemporaryFilesOfACrashedWriteAreRemovedAtLoad() throws {
        try withFolder { folder in
            try FileManager.default.createDirectory(atPath: folder + "/alarms", withIntermediateDirectories: true)
            let leftover = "\(folder)/alarms/.\(UUID().uuidString).json.tmp-1-2"
            try Data("{".utf8).write(to: URL(fileURLWithPath: leftover))
            let restored = try reload(folder)
            #expect(restored.alarms.isEmpty && restored.problem == nil)
            #expect(!FileManager.default.fileExists(atPath: leftover))
        }
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskFailsTheSaveKeepsWhatWasAnsweredAndTheNextSaveWritesWhatFailed() throws {
        try withFolder { folder in
            guard mount("tmpfs", folder, "tmpfs", 0, "size=256k") == 0 else {
                try Test.cancel("cannot mount a tmpfs here (\(String(cString: strerror(errno))))")
            }
            defer { umount(folder) }
            var engine = try engine(timers: 4)
            let id = try #require(engine.records.keys.first)
            let answered = try #require(engine.records[id])
            try withStore(folder) { store in
                try store.save(state(engine))
                // Fill the disk to the last block.
                #expect(FileManager.default.createFile(atPath: folder + "/filler", contents: nil))
                let filler = try #require(FileHandle(forWritingAtPath: folder + "/filler"))
                while (try? filler.write(contentsOf: Data(count: 4096))) != nil {}
                try filler.close()

                _ = engine.takeChangedAlarms()
                _ = try engine.pause(id: id, now: now + 5)
                let failure = #expect(throws: (any Error).self) { try store.save(changes(&engine)) }
                #expect("\(failure.map { "\($0)" } ?? "")".contains("ENOSPC"))
                let onDisk = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/alarms/\(id.uuidString).json"))
                #expect(try AlarmJSON.decoder.decode(StoredAlarm.self, from: onDisk).record == answered, "the old file is whole")

                // Space again: the next save writes the change that failed, though it names nothing.
                try FileManager.default.removeItem(atPath: folder + "/filler")
                let unchanged = changes(&engine)
                #expect(unchanged.changedAlarms == [])
                try store.save(unchanged)
            }
            #expect(try reload(folder).alarms == byID(engine))
        }
    }

    @Test("A state folder on a read-only file system (an SD card remounted read-only) still starts: its alarms ring, changes fail to save",
          .enabled(if: geteuid() == 0, "a read-only bind mount needs root"))
    func aReadOnlyStateFolderIsLoaded() throws {
        try withFolder { folder in
            var engine = try engine(timers: 2)
            try withStore(folder) { try $0.save(state(engine)) }
            // A power cut's damage on the card that then went read-only: the other alarms still load.
            let damagedID = try #require(engine.records.keys.sorted { $0.uuidString < $1.uuidString }.last)
            try Data("{\"schema".utf8).write(to: URL(fileURLWithPath: "\(folder)/alarms/\(damagedID.uuidString).json"))
            guard mount(folder, folder, nil, UInt(MS_BIND), nil) == 0 else {
                try Test.cancel("cannot bind-mount here (\(String(cString: strerror(errno))))")
            }
            defer { umount(folder) }
            guard mount(nil, folder, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil) == 0 else {
                try Test.cancel("cannot remount read-only here (\(String(cString: strerror(errno))))")
            }
            let store = StateStore(directory: folder, logger: Self.logger)
            let loaded = try store.load()
            var undamaged = byID(engine)
            undamaged[damagedID] = nil
            #expect(Dictionary(uniqueKeysWithValues: loaded.state.alarms.map { ($0.id, $0) }) == undamaged)
            #expect(loaded.problem?.contains("\(damagedID.uuidString).json is damaged") == true)
            #expect(loaded.problem?.contains("it stays in place, as its file system is read-only") == true)
            _ = engine.takeChangedAlarms()
            _ = try engine.pause(id: try #require(engine.records.keys.first), now: now + 5)
            let failure = #expect(throws: (any Error).self) { try store.save(changes(&engine)) }
            #expect("\(failure.map { "\($0)" } ?? "")".contains("EROFS"))
            // The lock still keeps a second process out.
            #expect(throws: StartupError.self) { try StateStore(directory: folder, logger: Self.logger).load() }
        }
    }

    // MARK: The single state file of alarmd 0.1

    /// `state.json` and `state.journal` as alarmd 0.1 wrote them: the snapshot holds `snapshot`,
    /// the journal one line per change of `changes`, then an append that a crash cut short.
    func writeLegacyFiles(in folder: String, snapshot: AlarmEngine, changes: [AlarmRecord]) throws {
        func json(_ records: [AlarmRecord]) throws -> String {
            try records.map { String(decoding: try AlarmJSON.encode(StoredAlarm($0)), as: UTF8.self) }.joined(separator: ",")
        }
        let snapshotText = #"{"alarms":[\#(try json(Array(snapshot.records.values)))],"authorization":"authorized","journalGeneration":7,"schemaVersion":2}"#
        try Data(snapshotText.utf8).write(to: URL(fileURLWithPath: folder + "/state.json"))
        var journal = #"{"journalGeneration":7}"# + "\n"
        for record in changes {
            journal += #"{"alarms":[\#(try json([record]))],"authorization":"denied","generation":7,"removed":[]}"# + "\n"
        }
        journal += #"{"alarms":[{"id""#
        try (Data(journal.utf8) + Data(count: 4096)).write(to: URL(fileURLWithPath: folder + "/state.journal"))
    }

    @Test func theSingleStateFileOfEarlierVersionsIsMovedToOneFilePerAlarm() throws {
        try withFolder { folder in
            var engine = try engine(timers: 2)
            let snapshot = engine
            let id = try #require(engine.records.keys.first)
            _ = try engine.pause(id: id, now: now + 10)
            try writeLegacyFiles(in: folder, snapshot: snapshot, changes: [try #require(engine.records[id])])

            let migrated = try reload(folder)
            #expect(migrated.alarms == byID(engine), "the snapshot with the journal's complete line applied")
            #expect(migrated.authorization == .denied)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.contains("state.json.migrated") && names.contains("state.journal.migrated"))
            #expect(!names.contains("state.json") && !names.contains("state.journal"))
            // Read again from the new layout alone.
            let again = try reload(folder)
            #expect(again.alarms == byID(engine) && again.authorization == .denied)
        }
    }

    @Test func aMoveCutShortAfterItsSaveIsFinishedNotRepeated() throws {
        try withFolder { folder in
            var engine = try engine(timers: 1)
            let snapshot = engine
            try writeLegacyFiles(in: folder, snapshot: snapshot, changes: [])
            // Moved, then the node changed its alarm.
            let id = try #require(engine.records.keys.first)
            _ = try engine.pause(id: id, now: now + 5)
            try withStore(folder) { try $0.save(state(engine)) }
            // As after a power cut between a move's save and its renames: the old files in place.
            for name in ["state.json", "state.journal"] {
                try FileManager.default.moveItem(atPath: "\(folder)/\(name).migrated", toPath: "\(folder)/\(name)")
            }
            #expect(try reload(folder).alarms == byID(engine), "the old state is not read over the newer one")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(!names.contains("state.json") && !names.contains("state.journal"))
        }
    }

    @Test func aDamagedStateFileOfEarlierVersionsIsKeptAsideWithItsJournal() throws {
        try withFolder { folder in
            try writeLegacyFiles(in: folder, snapshot: try engine(timers: 1), changes: [])
            try Data("{\"schemaVersion\":2,\"alarms\":[".utf8).write(to: URL(fileURLWithPath: folder + "/state.json"))
            let restored = try reload(folder)
            #expect(restored.alarms.isEmpty)
            #expect(restored.problem?.contains("state.json is damaged") == true)
            #expect(restored.problem?.contains("state.journal belongs to a damaged state file") == true)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.contains { $0.hasPrefix("state.json.damaged-") })
            #expect(names.contains { $0.hasPrefix("state.journal.damaged-") })
        }
    }

    @Test("A journal of earlier versions that cannot be read, or whose header is damaged, is kept aside and reported, never dropped in silence",
          arguments: ["unreadable", "damaged header"])
    func anUnusableJournalIsReported(damage: String) throws {
        try withFolder { folder in
            var engine = try engine(timers: 1)
            let snapshot = engine
            _ = try engine.pause(id: try #require(engine.records.keys.first), now: now + 10)
            try writeLegacyFiles(in: folder, snapshot: snapshot, changes: Array(engine.records.values))
            let journal = folder + "/state.journal"
            if damage == "unreadable" {
                // A folder in its place: read(2) fails (EISDIR), as on a worn card's EIO.
                try FileManager.default.removeItem(atPath: journal)
                try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: false)
            } else {
                var bytes = try Data(contentsOf: URL(fileURLWithPath: journal))
                bytes[bytes.firstIndex(of: UInt8(ascii: "}"))!] = UInt8(ascii: "]")
                try bytes.write(to: URL(fileURLWithPath: journal))
            }
            let restored = try reload(folder)
            #expect(restored.alarms == byID(snapshot), "the snapshot alone")
            let problem = try #require(restored.problem)
            #expect(problem.contains("state.journal \(damage == "unreadable" ? "cannot be read" : "is damaged at line 1")"), "\(problem)")
            #expect(problem.contains("the node started without the changes it held"), "\(problem)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).contains { $0.hasPrefix("state.journal.damaged-") })
        }
    }
}
