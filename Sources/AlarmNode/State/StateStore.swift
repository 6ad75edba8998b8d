import AlarmKit
import FoundationEssentials
import LinuxSystem
import Logging

/// The node's state file, `<state-directory>/state.json`: written atomically on every change.
///
/// The only place that reads or writes it. A damaged file is never silently replaced: it is
/// kept aside under a new name and the problem is reported.
public struct StateStore: Sendable {
    public let directory: String
    public var path: String { directory + "/state.json" }
    private let logger: Logger
    /// Keeps each record's bytes between writes: a write re-encodes only what changed.
    private let encoder: NodeStateEncoder

    /// - Parameter alarmEncoder: shared with the MQTT bridge, so each alarm's configuration is
    ///   encoded and kept once.
    public init(directory: String, alarmEncoder: SplicingAlarmEncoder = SplicingAlarmEncoder(), logger: Logger) {
        self.directory = directory
        self.encoder = NodeStateEncoder(records: alarmEncoder)
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
        return Loaded(state: state, problem: nil)
    }

    /// Writes the state atomically: temporary file, fsync, rename, fsync of the directory.
    public func save(_ state: NodeState) throws {
        try AtomicFile.write(encoder.encode(state), to: path)
    }

    private func keepAside(reason: String) throws(StateError) -> Loaded {
        do {
            let aside = try AtomicFile.quarantine(path)
            let problem = "the state file \(reason); it was kept as \(aside) and the node started with no alarms"
            logger.critical("state file damaged; kept aside", metadata: ["reason": "\(reason)", "keptAs": "\(aside)"])
            return Loaded(state: nil, problem: problem)
        } catch {
            throw StateError(message: "the state file \(path) \(reason) and could not be kept aside (\(error)): move it away by hand")
        }
    }
}
