import AlarmKit
@testable import AlarmNode
import Foundation
import Glibc
import Logging
import Testing

@Suite("State store: snapshot and journal")
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

    /// An engine with `count` timers, and the state the node would save.
    func engine(timers count: Int, title: String = "Tea") throws -> AlarmEngine {
        var engine = AlarmEngine()
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(
            title: .init(stringLiteral: title), stopButton: .init(text: "S", textColor: .white, systemImageName: "s"))), tintColor: .blue)
        for _ in 0..<count {
            _ = try engine.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes), now: now)
        }
        return engine
    }

    func state(_ engine: AlarmEngine, _ authorization: AlarmManager.AuthorizationState = .authorized) -> NodeState {
        NodeState(authorization: authorization, alarms: Array(engine.records.values))
    }

    /// Appends what the node would after `operation` on alarm `id` (its record, or its removal).
    func write(_ operation: AlarmOperation, _ id: UUID, in engine: inout AlarmEngine, at time: TimeInterval,
               to store: StateStore, _ authorization: AlarmManager.AuthorizationState = .authorized) throws {
        _ = try engine.perform(operation, id: id, now: now + time)
        #expect(store.wantsWholeState == false)
        let (changed, removed) = engine.takeChangedIDs()
        try store.append(NodeStateChange(alarms: changed.compactMap { engine.records[$0] }, authorization: authorization, removed: removed))
    }

    /// A store in `folder` with a snapshot of `timers` timers, then the first one paused (a journal line).
    func storeWithOnePause(in folder: String, timers: Int = 2) throws -> (StateStore, AlarmEngine, UUID) {
        let store = StateStore(directory: folder, logger: Self.logger)
        var engine = try engine(timers: timers)
        try store.save(state(engine))
        let id = try #require(engine.records.keys.first)
        try write(.pause, id, in: &engine, at: 5, to: store)
        return (store, engine, id)
    }

    /// Writes `text` after the journal's last append (over the zeros that follow it), as a crash
    /// or stale disk blocks could leave it.
    func appendRaw(_ text: String, toJournal path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(try journalContents(path).count))
        try handle.write(contentsOf: Data(text.utf8))
    }

    /// The journal's appends: the file without the zeros that follow them. Their lines hold no
    /// zero byte, so the first zero is found by bisection (a scan from the end took 15 s of a
    /// debug build over the thousand appends of `aJournalAsLargeAsTheSnapshotIsFoldedIntoANewOne`).
    func journalContents(_ path: String) throws -> Data {
        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        var appended = 0..<contents.count  // the first zero lies in appended.lowerBound...appended.upperBound
        while !appended.isEmpty {
            let middle = appended.lowerBound + appended.count / 2
            if contents[middle] == 0 { appended = appended.lowerBound..<middle } else { appended = (middle + 1)..<appended.upperBound }
        }
        return contents.prefix(appended.lowerBound)
    }

    /// What a new process would load from `folder`, as the loaded state and its problem.
    func reload(_ folder: String) throws -> StateStore.Loaded {
        try StateStore(directory: folder, logger: Self.logger).load()
    }

    func journalLines(_ store: StateStore) throws -> [String] {
        String(decoding: try journalContents(store.journalPath), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func changesAfterTheFirstSaveAreAppendedAndSurviveARestart() throws {
        try withFolder { folder in
            let store = StateStore(directory: folder, logger: Self.logger)
            var engine = try engine(timers: 3)
            #expect(store.wantsWholeState)
            try store.save(state(engine))
            let snapshot = try Data(contentsOf: URL(fileURLWithPath: store.path))
            let ids = Array(engine.records.keys)
            try write(.pause, ids[0], in: &engine, at: 5, to: store)
            try write(.cancel, ids[1], in: &engine, at: 6, to: store, .denied)
            // The snapshot was not rewritten; the journal has its header and one line a change.
            #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == snapshot)
            let lines = try journalLines(store)
            #expect(lines.count == 3)
            #expect(lines[0] == #"{"journalGeneration":1}"#)
            #expect(lines[2].contains(#""removed":["\#(ids[1].uuidString)"]"#))

            let loaded = try reload(folder)
            #expect(loaded.problem == nil)
            #expect(loaded.state?.authorization == .denied)
            #expect(loaded.state?.alarms == state(engine).alarms)
        }
    }

    @Test func aChangeWithNothingInItWritesNothing() throws {
        try withFolder { folder in
            let store = StateStore(directory: folder, logger: Self.logger)
            let engine = try engine(timers: 2)
            try store.save(state(engine))
            try store.append(NodeStateChange(alarms: [], authorization: .authorized, removed: []))
            #expect(try journalLines(store).count == 1)
            try store.append(NodeStateChange(alarms: [], authorization: .denied, removed: []))
            #expect(try journalLines(store).count == 2)
            #expect(try reload(folder).state?.authorization == .denied)
        }
    }

    /// An append whose blocks reached the disk in part: its start and its newline written, a
    /// block of zeros between (the journal runs on in zeros past its appends).
    @Test func aLastLineWithZerosInItIsAnUnfinishedAppend() throws {
        try withFolder { folder in
            let (store, engine, _) = try storeWithOnePause(in: folder)
            let answered = state(engine).alarms
            try appendRaw(#"{"alarms":[{"id":"# + String(repeating: "\0", count: 40) + #"}]}"# + "\n", toJournal: store.journalPath)

            let loaded = try reload(folder)
            #expect(loaded.problem == nil, "not damage: an append that never returned")
            #expect(loaded.state?.alarms == answered)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).allSatisfy { !$0.contains("damaged") }, "nothing kept aside")
        }
    }

    @Test func anUnfinishedLastLineIsIgnored() throws {
        try withFolder { folder in
            let (store, paused, id) = try storeWithOnePause(in: folder)
            var engine = paused
            let answered = state(engine).alarms
            // A crash in the middle of the next append: half a line, no newline.
            _ = try engine.perform(.resume, id: id, now: now + 9)
            try appendRaw(#"{"alarms":[{"id":"#, toJournal: store.journalPath)

            do {
                let next = StateStore(directory: folder, logger: Self.logger)
                let loaded = try next.load()
                #expect(loaded.problem == nil)
                #expect(loaded.state?.alarms == answered)
                // The next process starts with a snapshot, never appending after the torn line.
                #expect(next.wantsWholeState)
                _ = engine.takeChangedIDs()
                try next.save(state(engine))
                try write(.pause, id, in: &engine, at: 12, to: next)
            }
            #expect(try reload(folder).state?.alarms == state(engine).alarms)
        }
    }

    @Test func aJournalThatCannotStartMakesTheNextWriteASnapshot() throws {
        try withFolder { folder in
            let store = StateStore(directory: folder, logger: Self.logger)
            try FileManager.default.createDirectory(atPath: store.journalPath, withIntermediateDirectories: false)
            var engine = try engine(timers: 2)
            try store.save(state(engine))
            #expect(store.wantsWholeState)
            let id = try #require(engine.records.keys.first)
            _ = try engine.perform(.pause, id: id, now: now + 5)
            try store.save(state(engine))
            try FileManager.default.removeItem(atPath: store.journalPath)
            #expect(try reload(folder).state?.alarms == state(engine).alarms)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskFailsTheAppendKeepsWhatWasAnsweredAndTheNextWriteIsASnapshot() throws {
        try withFolder { folder in
            guard mount("tmpfs", folder, "tmpfs", 0, "size=256k") == 0 else {
                try Test.cancel("cannot mount a tmpfs here (\(String(cString: strerror(errno))))")
            }
            defer { umount(folder) }
            let store = StateStore(directory: folder, logger: Self.logger)
            var engine = try engine(timers: 4)
            try store.save(state(engine))
            // Fill the disk but for a few kilobytes: room for a line or two.
            #expect(FileManager.default.createFile(atPath: folder + "/filler", contents: nil))
            let filler = try #require(FileHandle(forWritingAtPath: folder + "/filler"))
            while (try? filler.write(contentsOf: Data(count: 4096))) != nil {}
            try filler.truncate(atOffset: filler.offsetInFile - 2 * 4096)
            try filler.close()

            let ids = Array(engine.records.keys)
            var answered = state(engine).alarms
            var failure: (any Error)?
            for step in 0..<200 where failure == nil {
                do {
                    try write(step % 2 == 0 ? .pause : .resume, ids[step % 4 / 2 * 2], in: &engine, at: Double(step), to: store)
                    answered = state(engine).alarms
                } catch {
                    failure = error
                }
            }
            #expect("\(failure.map { "\($0)" } ?? "no failure")".contains("ENOSPC"))
            #expect(store.wantsWholeState)
            #expect(try reload(folder).state?.alarms == answered)

            // Space again: the next write is a whole snapshot, and holds the change that failed.
            try FileManager.default.removeItem(atPath: folder + "/filler")
            try store.save(state(engine))
            #expect(try reload(folder).state?.alarms == state(engine).alarms)
        }
    }

    @Test func aSecondStoreOnTheSameFolderIsRefusedWhileTheFirstHoldsIt() throws {
        try withFolder { folder in
            let first = StateStore(directory: folder, logger: Self.logger)
            _ = try first.load()
            #expect(throws: StateStore.StateError.self) { try StateStore(directory: folder, logger: Self.logger).load() }
            #expect(first.wantsWholeState)  // keeps the first store, and its lock, alive until here
        }
    }

    @Test func aJournalFromBeforeTheSnapshotIsIgnored() throws {
        try withFolder { folder in
            let (store, paused, id) = try storeWithOnePause(in: folder)
            var engine = paused
            let staleJournal = try Data(contentsOf: URL(fileURLWithPath: store.journalPath))
            // A new process writes a snapshot of generation 2 and dies before it resets the journal.
            do {
                let next = StateStore(directory: folder, logger: Self.logger)
                _ = try next.load()
                _ = try engine.perform(.resume, id: id, now: now + 9)
                try next.save(state(engine))
                try staleJournal.write(to: URL(fileURLWithPath: next.journalPath))
            }
            let loaded = try reload(folder)
            #expect(loaded.state?.alarms == state(engine).alarms)
            #expect(try String(contentsOfFile: store.path, encoding: .utf8).contains(#""journalGeneration":2"#))
        }
    }

    @Test func replayStopsAtALineOfAnotherGeneration() throws {
        try withFolder { folder in
            let (store, paused, id) = try storeWithOnePause(in: folder, timers: 1)
            var engine = paused
            let oldLine = try journalLines(store)[1]
            do {
                // The next process: a snapshot of generation 2, then a resume.
                let next = StateStore(directory: folder, logger: Self.logger)
                _ = try next.load()
                _ = engine.takeChangedIDs()
                try next.save(state(engine))
                try write(.resume, id, in: &engine, at: 9, to: next)
                // Blocks of the old journal after the end, as a crash while the file grew can leave them.
                try appendRaw(oldLine + "\n", toJournal: next.journalPath)
            }
            let answered = state(engine).alarms
            let loaded = try StateStore(directory: folder, logger: Self.logger).load()
            #expect(loaded.problem == nil)
            #expect(loaded.state?.alarms == answered)
        }
    }

    @Test func aDamagedLineInTheMiddleKeepsTheJournalAsideAndReportsIt() throws {
        try withFolder { folder in
            let (store, paused, id) = try storeWithOnePause(in: folder)
            var engine = paused
            let beforeDamage = state(engine).alarms
            try write(.resume, id, in: &engine, at: 9, to: store)
            try write(.cancel, id, in: &engine, at: 10, to: store)
            var lines = try journalLines(store)
            lines[2] = "{not json"  // the resume; the cancel after it must not be applied either
            try (lines.joined(separator: "\n") + "\n").write(toFile: store.journalPath, atomically: false, encoding: .utf8)

            let loaded = try reload(folder)
            #expect(loaded.state?.alarms == beforeDamage)
            #expect(loaded.problem?.contains("damaged at line 3") == true)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.contains { $0.hasPrefix("state.journal.damaged-") })
            #expect(!names.contains("state.journal"))
        }
    }

    @Test func aJournalAsLargeAsTheSnapshotIsFoldedIntoANewOne() throws {
        try withFolder { folder in
            let threshold = 64 * 1024
            let store = StateStore(directory: folder, minimumSnapshotThreshold: threshold, logger: Self.logger)
            var engine = try engine(timers: 1)
            try store.save(state(engine))
            let id = try #require(engine.records.keys.first)
            // Each line holds the timer's whole record: a few hundred bytes, so 64 KiB take some hundreds.
            var snapshots = 0
            var lastJournalSize = 0
            for step in 0..<1000 {
                if store.wantsWholeState {
                    _ = try engine.perform(step % 2 == 0 ? .pause : .resume, id: id, now: now + Double(step))
                    _ = engine.takeChangedIDs()
                    try store.save(state(engine))
                } else {
                    try write(step % 2 == 0 ? .pause : .resume, id, in: &engine, at: Double(step), to: store)
                }
                let journalSize = try journalContents(store.journalPath).count
                if journalSize < lastJournalSize { snapshots += 1 }
                lastJournalSize = journalSize
                #expect(journalSize <= threshold + 2048)
            }
            #expect(snapshots >= 1)
            #expect(try reload(folder).state?.alarms == state(engine).alarms)
        }
    }

    @Test func aDamagedSnapshotIsKeptAsideWithItsJournal() throws {
        try withFolder { folder in
            let (store, _, _) = try storeWithOnePause(in: folder, timers: 1)
            try Data("{\"schemaVersion\":2,\"alarms\":[".utf8).write(to: URL(fileURLWithPath: store.path))

            let loaded = try reload(folder)
            #expect(loaded.state == nil)
            #expect(loaded.problem?.contains("its journal as") == true)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.contains { $0.hasPrefix("state.json.damaged-") })
            #expect(names.contains { $0.hasPrefix("state.journal.damaged-") })
        }
    }

    @Test func aVersionOneFileIsReadAndRewrittenAsVersionTwo() throws {
        try withFolder { folder in
            let engine = try engine(timers: 1)
            var old = state(engine)
            old.schemaVersion = 1
            try AlarmJSON.encoder.encode(old).write(to: URL(fileURLWithPath: folder + "/state.json"))
            let store = StateStore(directory: folder, logger: Self.logger)
            #expect(try store.load().state?.alarms == old.alarms)
            try store.save(state(engine))
            let text = try String(contentsOfFile: store.path, encoding: .utf8)
            #expect(text.contains(#""journalGeneration":1,"schemaVersion":2}"#))
        }
    }
}
