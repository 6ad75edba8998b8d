import AlarmKit
import FoundationEssentials
import LinuxSystem
import OrderedCollections

/// Reads the state as alarmd 0.1 kept it, so that an upgrade keeps every alarm: a snapshot,
/// `state.json` (`{"alarms":[…],"authorization":…,"journalGeneration":N,"schemaVersion":2}`), and
/// a journal of the changes made since, `state.journal`: a header line `{"journalGeneration":N}`,
/// then one change a line (`{"alarms":[…],"authorization":…,"generation":N,"removed":[…]}`),
/// then zeros. A last line without its newline, or holding a zero byte, is an append a crash cut
/// short (never acknowledged) and is ignored; so is a journal of another generation.
struct LegacyStateFile {
    let directory: String

    var path: String { directory + "/state.json" }
    var journalPath: String { directory + "/state.journal" }

    struct Contents {
        var state: NodeState
        /// Files to keep aside once the state is saved in the new layout, and why.
        var damaged: [(file: String, reason: String, consequence: String)] = []
    }

    private struct Snapshot: Decodable {
        var schemaVersion: Int
        var authorization: AlarmManager.AuthorizationState
        var alarms: [StoredAlarm]
        var journalGeneration: UInt64?
    }

    private struct Header: Decodable { var journalGeneration: UInt64 }

    private struct Change: Decodable {
        var alarms: [StoredAlarm]
        var authorization: AlarmManager.AuthorizationState
        var generation: UInt64
        var removed: [UUID]
    }

    /// The state of `state.json` with its journal applied; nil when there is no `state.json`.
    /// A damaged file is named in the contents, and the state read as far as it goes.
    func load() throws(StartupError) -> Contents? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let snapshot: Snapshot
        do {
            snapshot = try AlarmJSON.decoder.decode(Snapshot.self, from: AtomicFile.read(path))
        } catch {
            let reason = (error as? SystemError).map { "cannot be read (\($0))" }
                ?? "is damaged (\(AlarmNodeError(decoding: error).message))"
            let journal = FileManager.default.fileExists(atPath: journalPath) ? [(journalPath, "belongs to a damaged state file")] : []
            return Contents(state: NodeState(), damaged: ([(path, reason)] + journal).map { ($0, $1, "the node started with no alarms") })
        }
        guard snapshot.schemaVersion <= 2 else {
            throw StartupError("\(path) was written by an unknown alarmd (schema \(snapshot.schemaVersion)): move it away to start empty")
        }
        var alarms = OrderedDictionary(snapshot.alarms.map { ($0.record.id, $0.record) }) { $1 }
        var authorization = snapshot.authorization
        let journal = journalLines(generation: snapshot.journalGeneration)
        var damaged = journal.damage.map { [(file: journalPath, reason: $0, consequence: "the node started without the changes it held")] } ?? []
        for (number, line) in journal.lines {
            guard let change = try? AlarmJSON.decoder.decode(Change.self, from: line) else {
                damaged.append((journalPath, "is damaged at line \(number)", "the node started with the changes before that line"))
                break
            }
            guard change.generation == snapshot.journalGeneration else { break }
            change.alarms.forEach { alarms[$0.record.id] = $0.record }
            alarms.removeAll { change.removed.contains($0.key) }
            authorization = change.authorization
        }
        return Contents(state: NodeState(authorization: authorization, alarms: Array(alarms.values)), damaged: damaged)
    }

    /// The journal's complete change lines, numbered from 2, when its header names `generation`;
    /// or why it cannot be used: it cannot be read, or changes follow a damaged header.
    private func journalLines(generation: UInt64?) -> (lines: [(Int, Data)], damage: String?) {
        guard let generation, FileManager.default.fileExists(atPath: journalPath) else { return ([], nil) }
        let contents: Data
        do { contents = try AtomicFile.read(journalPath) } catch { return ([], "cannot be read (\(error))") }
        let written = contents[..<(contents.lastIndex { $0 != 0 }.map { $0 + 1 } ?? contents.startIndex)]
        var lines = written.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        _ = lines.popLast()  // after the last newline: nothing, or an append cut short
        if let last = lines.last, last.contains(0) { lines.removeLast() }
        guard let header = lines.first else { return ([], nil) }
        guard let decoded = try? AlarmJSON.decoder.decode(Header.self, from: header) else {
            // A header cut short by a crash while the journal was begun anew has no change after it.
            return ([], lines.count > 1 ? "is damaged at line 1" : nil)
        }
        guard decoded.journalGeneration == generation else { return ([], nil) }
        return (lines.enumerated().dropFirst().map { ($0.offset + 1, Data($0.element)) }, nil)
    }

    /// Renames `state.json`, then `state.journal`, to `….migrated`, durably, once their state is
    /// in the new layout (whose `node.json` then exists, so they are never read again).
    func retire() throws(StartupError) {
        for file in [path, journalPath] where FileManager.default.fileExists(atPath: file) {
            do { try AtomicFile.move(file, to: file + ".migrated") } catch {
                throw StartupError("the state in \(path) was copied to one file per alarm, but the old file could not be renamed (\(error)): rename state.json and state.journal there to *.migrated by hand")
            }
        }
    }
}
