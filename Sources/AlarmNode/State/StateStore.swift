import AlarmKit
import FoundationEssentials
import Glibc
import LinuxSystem
import Logging
import Synchronization

/// The node's state on disk: a snapshot, `<state-directory>/state.json`, and a journal of the
/// changes made since, `<state-directory>/state.journal`.
///
/// - A change appends one line to the journal: the records it changed, whole (``NodeStateChange``),
///   made durable with `fdatasync` before the change is answered.
/// - Once the journal has grown as large as the snapshot (256 KiB at least), and at the first
///   write of a process, the whole state is written as a new snapshot instead (atomically:
///   temporary file, fsync, rename, fsync of the folder) with the next journal generation, and
///   the journal starts again. A journal whose header names another generation than the
///   snapshot's is from before the snapshot and is ignored.
/// - The journal file runs on in zeros past its lines (``JournalFile``). A crash in the middle of
///   an append leaves an unfinished last line (no newline, or zeros where part of it did not
///   reach the disk), which is ignored: that change had not been answered.
///
/// The only place that reads or writes these files. A damaged file is never silently replaced:
/// it is kept aside under a new name and the problem is reported.
public struct StateStore: Sendable {
    public let directory: String
    public var path: String { directory + "/state.json" }
    public var journalPath: String { directory + "/state.journal" }
    private let logger: Logger
    /// Keeps each record's bytes between writes: a write re-encodes only what changed.
    private let encoder: NodeStateEncoder
    private let journal = Journal()

    /// The journal being appended to. Used by one save at a time (the node's state writer), so
    /// its lock is never contended.
    private final class Journal: Sendable {
        struct State {
            /// Nil until the first snapshot of this process, and after any failed write: the next
            /// save writes a snapshot.
            var file: JournalFile?
            /// The generation of the newest snapshot written or attempted.
            var generation: UInt64 = 0
            /// The journal size at which the next save writes a snapshot instead.
            var snapshotThreshold = 0
            /// Taken by ``load()``: two processes writing one state would each undo the other's
            /// journal (alarmd, and `alarmd reset-authorization` while it runs).
            var lock: ExclusiveLock?
        }

        let state = Mutex(State())
    }

    /// The smallest journal folded into a new snapshot, unless told otherwise: 256 KiB.
    public static let defaultMinimumSnapshotThreshold = 256 * 1024
    /// The smallest journal folded into a new snapshot.
    let minimumSnapshotThreshold: Int

    /// - Parameters:
    ///   - alarmEncoder: shared with the MQTT bridge, so each alarm's configuration is encoded
    ///     and kept once.
    ///   - minimumSnapshotThreshold: the journal is folded into a new snapshot once it is as
    ///     large as the snapshot, and at least this large. A snapshot costs three `fsync`s and the
    ///     whole state's bytes; each 256 KiB of journal costs about 40 ms more at start-up (on
    ///     this project's test machine; `docs/performance.md`).
    public init(directory: String, alarmEncoder: SplicingAlarmEncoder = SplicingAlarmEncoder(),
                minimumSnapshotThreshold: Int = StateStore.defaultMinimumSnapshotThreshold, logger: Logger) {
        self.directory = directory
        self.encoder = NodeStateEncoder(records: alarmEncoder)
        self.minimumSnapshotThreshold = minimumSnapshotThreshold
        self.logger = logger
    }

    /// What loading found.
    public struct Loaded: Sendable {
        public var state: NodeState?
        /// Set when a damaged file was kept aside: what happened and where the file is now.
        public var problem: String?
    }

    /// Why the state cannot be used at all.
    public struct StateError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Creates the directory if needed and reads the state; nil state when there is none yet.
    public func load() throws(StateError) -> Loaded {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StateError(message: "cannot create the state directory \(directory): \(error.localizedDescription); set node.state-directory or --state-dir to a folder alarmd's user may write")
        }
        do {
            let lock = try ExclusiveLock(path: directory + "/lock")
            journal.state.withLock { $0.lock = lock }
        } catch where error.code == EWOULDBLOCK {
            throw StateError(message: "another alarmd is using the state in \(directory): stop it first (systemctl stop alarmd), or give this one another state directory")
        } catch {
            throw StateError(message: "cannot lock the state directory \(directory): \(error)")
        }
        do {
            try AtomicFile.removeLeftoverTemporaryFiles(of: path)
        } catch {
            logger.warning("leftover temporary state files not removed", metadata: ["error": "\(error)"])
        }
        guard FileManager.default.fileExists(atPath: path) else { return Loaded(state: nil, problem: nil) }
        let data: Data
        do {
            data = try AtomicFile.read(path)
        } catch {
            return try keepAside(reason: "cannot be read (\(error))")
        }
        let state: NodeState
        do {
            state = try AlarmJSON.decoder.decode(NodeState.self, from: data)
        } catch {
            return try keepAside(reason: "is damaged (\(AlarmManager.AlarmError(decoding: error).message))")
        }
        guard state.schemaVersion <= NodeState.currentSchemaVersion else {
            throw StateError(message: "\(path) was written by a newer alarmd (schema \(state.schemaVersion), this one reads \(NodeState.currentSchemaVersion)): install the newer alarmd again, or move the file away to start empty")
        }
        return try replayJournal(onto: state)
    }

    /// The snapshot with the journal's changes applied, when the journal continues it.
    private func replayJournal(onto snapshot: NodeState) throws(StateError) -> Loaded {
        let generation = snapshot.journalGeneration ?? 0
        journal.state.withLock { $0.generation = generation }
        guard FileManager.default.fileExists(atPath: journalPath) else { return Loaded(state: snapshot, problem: nil) }
        let contents: Data
        do {
            contents = try AtomicFile.read(journalPath)
        } catch {
            throw StateError(message: "the state journal \(journalPath) cannot be read (\(error)): it holds the latest changes; let alarmd's user read it, or move it away to start from \(path) alone")
        }
        // The file runs on in zeros past the appends (`JournalFile`).
        let appended = contents[..<(contents.lastIndex { $0 != 0 }.map { $0 + 1 } ?? contents.startIndex)]
        var lines = appended.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // What follows the last newline: nothing, or an append that a crash cut short (never
        // answered). So is a last line with a zero byte, which JSON never holds: an append whose
        // blocks reached the disk in part, the newline's among them.
        var unfinished = lines.popLast() ?? Data()
        if unfinished.isEmpty, lines.count > 1, let last = lines.last, last.contains(0) {
            unfinished = lines.removeLast()
        }
        if !unfinished.isEmpty {
            logger.notice("unfinished journal entry ignored", metadata: ["bytes": "\(unfinished.count)"])
        }
        guard let headerGeneration = lines.first.flatMap({ NodeStateChange.generation(inJournalHeader: $0) }) else {
            return Loaded(state: snapshot, problem: nil)  // a reset cut short: the snapshot holds everything
        }
        // Generations only grow, even past a journal that belongs to no snapshot we have.
        journal.state.withLock { $0.generation = max(generation, headerGeneration) }
        guard headerGeneration == generation else {
            if headerGeneration > generation {
                logger.warning("state journal newer than the snapshot ignored", metadata: [
                    "snapshotGeneration": "\(generation)", "journalGeneration": "\(headerGeneration)"])
            }
            return Loaded(state: snapshot, problem: nil)  // from before the snapshot, which holds its changes
        }
        var changes: [NodeStateChange] = []
        for (index, line) in lines.enumerated().dropFirst() {
            let change: NodeStateChange
            do {
                change = try AlarmJSON.decoder.decode(NodeStateChange.self, from: Data(line))
            } catch {
                let reason = AlarmManager.AlarmError(decoding: error).message
                let aside: String
                do {
                    aside = try AtomicFile.quarantine(journalPath)
                } catch {
                    throw StateError(message: "the state journal \(journalPath) is damaged at line \(index + 1) (\(reason)) and could not be kept aside (\(error)): move it away by hand")
                }
                logger.critical("state journal damaged; kept aside", metadata: ["line": "\(index + 1)", "reason": "\(reason)", "keptAs": "\(aside)"])
                return Loaded(state: snapshot.applying(changes),
                              problem: "the state journal is damaged at line \(index + 1) (\(reason)); it was kept as \(aside) and the node started with the changes before that line")
            }
            // A line of another generation is not this journal's: a crash while the file grew
            // can leave blocks of an older journal after its end.
            guard change.generation == generation else {
                logger.notice("journal entries of another generation ignored", metadata: ["line": "\(index + 1)"])
                break
            }
            changes.append(change)
        }
        return Loaded(state: snapshot.applying(changes), problem: nil)
    }

    /// Whether the next write must be a whole snapshot (``save(_:)``): at the first write of the
    /// process, after a failed write, and once the journal has grown as large as the snapshot.
    /// Otherwise ``append(_:)`` takes what changed.
    public var wantsWholeState: Bool {
        journal.state.withLock { journal in
            guard let file = journal.file else { return true }
            return file.size >= journal.snapshotThreshold
        }
    }

    /// Writes `state` as a new snapshot (atomically: temporary file, fsync, rename, fsync of the
    /// directory) of the next journal generation, then starts the journal again, empty.
    public func save(_ state: NodeState) throws {
        try journal.state.withLock { journal in
            // Never append to the old journal again: from here the snapshot on disk may be the new one.
            journal.file = nil
            journal.generation += 1
            var snapshot = state
            snapshot.schemaVersion = NodeState.currentSchemaVersion
            snapshot.journalGeneration = journal.generation
            let bytes = try encoder.encode(snapshot)
            try AtomicFile.write(bytes, to: path)
            journal.snapshotThreshold = max(minimumSnapshotThreshold, bytes.count)
            do {
                journal.file = try JournalFile(resetting: journalPath, header: NodeStateChange.journalHeader(generation: journal.generation))
            } catch {
                // The snapshot holds this state; the next write is a snapshot again.
                logger.warning("state journal not started", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Appends `change` to the journal as one line, durably (`write`, `fdatasync`). Call it only
    /// when ``wantsWholeState`` is false. After a failure the next write must be a snapshot.
    public func append(_ change: NodeStateChange) throws {
        try journal.state.withLock { journal in
            guard let file = journal.file else {
                throw StateError(message: "the state journal is not open (a snapshot must be written first): this is a bug in alarmd; restart it")
            }
            do {
                var change = change
                change.generation = journal.generation
                guard let line = try encoder.encodeLine(change) else { return }
                try file.append(line)
            } catch {
                journal.file = nil  // the file may end in part of the line
                throw error
            }
        }
    }

    private func keepAside(reason: String) throws(StateError) -> Loaded {
        do {
            let aside = try AtomicFile.quarantine(path)
            // The journal only means something on top of its snapshot.
            let journalAside = FileManager.default.fileExists(atPath: journalPath) ? try AtomicFile.quarantine(journalPath) : nil
            let problem = "the state file \(reason); it was kept as \(aside)\(journalAside.map { " (its journal as \($0))" } ?? "") and the node started with no alarms"
            logger.critical("state file damaged; kept aside", metadata: ["reason": "\(reason)", "keptAs": "\(aside)"])
            return Loaded(state: nil, problem: problem)
        } catch {
            throw StateError(message: "the state file \(path) \(reason) and could not be kept aside (\(error)): move it away by hand")
        }
    }
}
