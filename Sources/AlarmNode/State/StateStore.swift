import AlarmKit
import FoundationEssentials
import Glibc
import LinuxSystem
import Logging
import Synchronization

/// The node's state on disk, one small file per alarm:
///
/// - `<state-directory>/alarms/<id>.json`, each alarm (``StoredAlarm``);
/// - `<state-directory>/node.json`, the authorization decision (``StoredNode``);
/// - `<state-directory>/lock`, held while a process uses the state.
///
/// A save looks only at the alarms the state names as changed (``NodeState/changedAlarms``; every
/// alarm when that is nil) and at those a failed save left in doubt: it writes each whose
/// contents differ from its file, atomically (``AtomicFile``: temporary file, fsync, rename,
/// fsync of the folder), and removes the files of those that are gone. A power cut leaves every
/// file either old or new. What a failed save could not write is written by the next one.
///
/// The only place that reads or writes these files. A damaged file is never silently replaced:
/// it is kept aside under a new name and the problem is reported.
public final class StateStore: Sendable {
    public let directory: String
    public var alarmsDirectory: String { directory + "/alarms" }
    public var nodePath: String { directory + "/node.json" }
    private let logger: Logger

    private struct Saved {
        /// What each alarm's file holds now.
        var alarms: [UUID: AlarmRecord] = [:]
        /// Alarms whose file is in doubt: a write or removal failed part way (after the rename or
        /// unlink, the directory's fsync may have failed). Written or removed again by the next save.
        var unsure: Set<UUID> = []
        /// What `node.json` holds now; nil when it must be written.
        var node: StoredNode?
        /// Taken by ``load()``: two processes writing one state would each undo the other's
        /// writes (alarmd, and `alarmd reset-authorization` while it runs).
        var lock: ExclusiveLock?
    }

    /// Used by one save at a time (the node's state writer), so its lock is never contended.
    private let saved = Mutex(Saved())

    public init(directory: String, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// Whether a node kept its state in the folder: its alarms folder (made at its first start), or the single file of earlier versions.
    public var holdsState: Bool { [alarmsDirectory, LegacyStateFile(directory: directory).path].contains(where: FileManager.default.fileExists) }

    /// The copy of the configuration file the daemon last started with (`last-started.toml`).
    public static func lastStartedConfigurationPath(in directory: String) -> String { directory + "/last-started.toml" }

    /// What loading found.
    public struct Loaded: Sendable {
        public var state: NodeState
        /// Set when a damaged file was kept aside at this start: what happened and where the file is now.
        public var problem: String?
        /// The files kept aside at earlier starts that are still there.
        public var keptEarlier: [String] = []
        /// The alarms whose files were kept aside at this start (named by their files).
        public var damagedAlarms: Set<UUID> = []

        /// What the status says: this start's damage, then the files kept earlier, until someone removes them.
        public var statusProblem: String? {
            let earlier = keptEarlier.isEmpty ? nil : "damaged state files kept aside earlier are still there (\(keptEarlier.joined(separator: ", "))): the node started without what they held; look at them, then remove them: this message goes at the next start"
            let parts = [problem, earlier].compactMap { $0 }
            return parts.isEmpty ? nil : parts.joined(separator: "; ")
        }
    }

    /// Creates the directories if needed, takes the lock and reads the state (empty when there
    /// is none yet). A state kept in the single file of earlier versions is moved to this layout.
    public func load() throws(StartupError) -> Loaded {
        do {
            for folder in [directory, alarmsDirectory] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            }
        } catch {
            throw StartupError("cannot create the state directory \(directory): \(error.localizedDescription); set node.state-directory or --state-dir to a folder alarmd's user may write")
        }
        do {
            let lock = try ExclusiveLock(path: directory + "/lock")
            saved.withLock { $0.lock = lock }
        } catch where error.code == EWOULDBLOCK {
            throw StartupError("another alarmd is using the state in \(directory): stop it first (systemctl stop alarmd), or give this one another state directory")
        } catch { throw StartupError("cannot lock the state directory \(directory): \(error)") }
        if access(alarmsDirectory, W_OK) != 0 {
            logger.critical("the state cannot be saved: the saved alarms run, but no change reaches the disk until alarmd may write there: remount its file system read-write, or let alarmd's user write the folder",
                            metadata: ["directory": "\(alarmsDirectory)", "error": "\(String(cString: strerror(errno)))"])
        }
        for folder in [directory, alarmsDirectory] {
            do {
                try AtomicFile.removeLeftoverTemporaryFiles(in: folder)
            } catch { logger.warning("leftover temporary state files not removed", metadata: ["error": "\(error)"]) }
        }
        let keptEarlier = [directory, alarmsDirectory].flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.contains(".damaged-") }.map { "\(folder)/\($0)" }
        }.sorted()
        if !keptEarlier.isEmpty { logger.warning("damaged state files kept aside earlier are still there", metadata: ["files": "\(keptEarlier)"]) }
        let legacy = LegacyStateFile(directory: directory)
        if FileManager.default.fileExists(atPath: nodePath) {
            // A move to this layout finished its save (node.json is written last): only the old
            // files may be left to rename, never to read again over newer state.
            try legacy.retire()
        } else if let contents = try legacy.load() {
            return try migrate(contents, from: legacy, keptEarlier: keptEarlier)
        }
        var problems: [String] = []
        let node = try readNode(problems: &problems)
        // The order alarms were first scheduled in is not kept; the earliest alert comes first.
        let names = try alarmFileNames()
        let records = try names.map { name throws(StartupError) in try readAlarm(name, problems: &problems) }
            .compactMap { $0 }.sorted(by: AlarmRecord.alertsSooner)
        saved.withLock { saved in
            saved.alarms = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
            saved.node = node
        }
        return Loaded(state: NodeState(authorization: node?.authorization ?? .notDetermined, alarms: records,
                                       timeZone: node?.timeZone.flatMap(TimeZone.init(identifier:))),
                      problem: problems.isEmpty ? nil : problems.joined(separator: "; "), keptEarlier: keptEarlier,
                      damagedAlarms: Set(names.compactMap { UUID(uuidString: String($0.dropLast(5))) }).subtracting(records.map(\.id)))
    }

    /// Makes `state` durable: among the alarms it names as changed and those in doubt, writes the
    /// files that differ from what was saved and removes those of alarms that are gone. Throws
    /// the first failure after trying every file.
    public func save(_ state: NodeState) throws {
        try saved.withLock { saved in
            var firstFailure: (any Error)?
            func attempt(_ body: () throws -> Void) {
                do { try body() } catch { firstFailure = firstFailure ?? error }
            }
            let candidates = (state.changedAlarms ?? Set(saved.alarms.keys).union(state.alarms.map(\.id))).union(saved.unsure)
            var present = Set<UUID>()
            for record in state.alarms where candidates.contains(record.id) {
                present.insert(record.id)
                guard saved.alarms[record.id] != record || saved.unsure.contains(record.id) else { continue }
                saved.alarms[record.id] = nil
                saved.unsure.insert(record.id)
                attempt {
                    try AtomicFile.write(try AlarmJSON.encode(StoredAlarm(record)), to: alarmPath(record.id))
                    saved.alarms[record.id] = record
                    saved.unsure.remove(record.id)
                }
            }
            for id in candidates.subtracting(present) where saved.alarms[id] != nil || saved.unsure.contains(id) {
                saved.alarms[id] = nil
                saved.unsure.insert(id)
                attempt {
                    try AtomicFile.remove(alarmPath(id))
                    saved.unsure.remove(id)
                }
            }
            // The zone only once every alarm file is in it: a failed write keeps the old plan on disk.
            let node = StoredNode(authorization: state.authorization, timeZone: firstFailure == nil ? state.timeZone?.identifier : saved.node?.timeZone)
            if saved.node != node {
                saved.node = nil
                attempt {
                    try AtomicFile.write(try AlarmJSON.encode(node), to: nodePath)
                    saved.node = node
                }
            }
            if let firstFailure { throw firstFailure }
        }
    }

    private func alarmPath(_ id: UUID) -> String { "\(alarmsDirectory)/\(id.uuidString).json" }

    /// The names of the alarm files, `<id>.json`.
    private func alarmFileNames() throws(StartupError) -> [String] {
        do {
            let names = try FileManager.default.contentsOfDirectory(atPath: alarmsDirectory)
            return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        } catch {
            throw StartupError("cannot list the alarms in \(alarmsDirectory): \(error.localizedDescription); let alarmd's user read that folder")
        }
    }

    private func readNode(problems: inout [String]) throws(StartupError) -> StoredNode? {
        guard FileManager.default.fileExists(atPath: nodePath) else { return nil }
        guard let node: StoredNode = try read(nodePath, problems: &problems) else { return nil }
        guard node.schemaVersion <= StoredNode.currentSchemaVersion else {
            throw StartupError("\(nodePath) was written by a newer alarmd (schema \(node.schemaVersion), this one reads \(StoredNode.currentSchemaVersion)): install the newer alarmd again, or move the state directory away to start empty")
        }
        return node
    }

    private func readAlarm(_ name: String, problems: inout [String]) throws(StartupError) -> AlarmRecord? {
        let path = "\(alarmsDirectory)/\(name)"
        guard let stored: StoredAlarm = try read(path, problems: &problems) else { return nil }
        guard "\(stored.record.id.uuidString).json" == name else {
            try keepAside(path, reason: "holds alarm \(stored.record.id.uuidString), not the one its name says", problems: &problems)
            return nil
        }
        return stored.record
    }

    /// Decodes the file at `path`; a file that cannot be read or decoded is kept aside and reported.
    private func read<Value: Decodable>(_ path: String, problems: inout [String]) throws(StartupError) -> Value? {
        do {
            return try AlarmJSON.decoder.decode(Value.self, from: AtomicFile.read(path))
        } catch let error as SystemError {
            try keepAside(path, reason: "cannot be read (\(error))", problems: &problems)
        } catch { try keepAside(path, reason: "is damaged (\(AlarmNodeError(decoding: error).message))", problems: &problems) }
        return nil
    }

    private func keepAside(_ path: String, reason: String, consequence: String = "the node started without it",
                           problems: inout [String]) throws(StartupError) {
        let aside: String
        do { aside = try AtomicFile.quarantine(path) } catch where error.code == EROFS {
            // A card remounted read-only after errors: the other alarms must still ring.
            logger.critical("state file damaged; left in place on a read-only file system", metadata: ["file": "\(path)", "reason": "\(reason)"])
            return problems.append("the state file \(path) \(reason) and \(consequence); it stays in place, as its file system is read-only: remount it read-write, then restart alarmd")
        } catch {
            throw StartupError("the state file \(path) \(reason) and could not be kept aside (\(error)): move it away by hand")
        }
        logger.critical("state file damaged; kept aside", metadata: ["file": "\(path)", "reason": "\(reason)", "keptAs": "\(aside)"])
        problems.append("the state file \(path) \(reason); it was kept as \(aside) and \(consequence): look at it, then remove it")
    }

    /// Writes a state read from the single file of earlier versions in this layout; then, and
    /// only then, keeps its damaged files aside and renames the rest, so the move happens once.
    private func migrate(_ contents: LegacyStateFile.Contents, from legacy: LegacyStateFile, keptEarlier: [String]) throws(StartupError) -> Loaded {
        do { try save(contents.state) } catch {
            throw StartupError("the state in \(legacy.path) could not be moved to one file per alarm (\(error)): free space on that file system, or let alarmd's user write \(directory)")
        }
        var problems: [String] = []
        for damage in contents.damaged {
            try keepAside(damage.file, reason: damage.reason, consequence: damage.consequence, problems: &problems)
        }
        try legacy.retire()
        logger.notice("state moved to one file per alarm", metadata: ["alarms": "\(contents.state.alarms.count)"])
        return Loaded(state: contents.state, problem: problems.isEmpty ? nil : problems.joined(separator: "; "), keptEarlier: keptEarlier)
    }
}
