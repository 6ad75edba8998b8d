import FoundationEssentials
import Synchronization

/// Encodes a ``NodeState`` to the same bytes as `AlarmJSON.encoder` (a snapshot), or a
/// ``NodeStateChange`` (a journal line), re-encoding only the records that changed.
///
/// A change touches one record or a few: keeping each record's bytes makes a snapshot cost one
/// record's encoding plus a copy, instead of every record's; a journal line's records are kept
/// for the next snapshot. The cache holds one encoded copy per alarm (about as many bytes as the
/// snapshot) and drops the records that are gone.
public final class NodeStateEncoder: Sendable {
    /// A class, so that looking one up retains one object rather than every field of a record.
    private final class Encoded: Sendable {
        let record: AlarmRecord
        let bytes: [UInt8]

        init(record: AlarmRecord, bytes: [UInt8]) {
            self.record = record
            self.bytes = bytes
        }
    }

    private struct Cache {
        /// Each alarm's record and bytes as last encoded.
        var entries: [UUID: Encoded] = [:]
        /// The size of the last state encoded, to allocate the next one at once.
        var lastSize = 0
        /// The authorization of the last state encoded.
        var authorization: AlarmManager.AuthorizationState?
    }

    /// Held for the whole of `encode`: one writer calls it at a time, so it is never contended.
    private let cache = Mutex(Cache())
    private let records: SplicingAlarmEncoder

    /// - Parameter records: encodes the records that changed; share it with whatever encodes
    ///   the same alarms' documents, so each configuration is kept once.
    public init(records: SplicingAlarmEncoder = SplicingAlarmEncoder()) {
        self.records = records
    }

    /// `state` as compact, key-sorted JSON: `{"alarms":[…],"authorization":…,"journalGeneration":…,"schemaVersion":…}`,
    /// the order `AlarmJSON.encoder` writes `NodeState`'s keys in.
    ///
    /// A record the engine stamped is known unchanged by its revision alone; others are compared.
    public func encode(_ state: NodeState) throws -> [UInt8] {
        try cache.withLock { cache in
            var bytes = Array(#"{"alarms":["#.utf8)
            bytes.reserveCapacity(cache.lastSize)
            for index in state.alarms.indices {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += try encoded(state.alarms[index], in: &cache)
            }
            dropGone(from: &cache, keeping: state)
            cache.authorization = state.authorization
            bytes += Array(#"],"authorization":"#.utf8)
            CompactJSON.append(string: state.authorization.rawValue, to: &bytes)
            if let generation = state.journalGeneration { bytes += Array(#","journalGeneration":\#(generation)"#.utf8) }
            bytes += Array(#","schemaVersion":\#(state.schemaVersion)}"#.utf8)
            cache.lastSize = bytes.count
            return bytes
        }
    }

    /// `change` as one line of the state journal: compact, key-sorted JSON and a newline. Nil
    /// when it holds nothing: no record, no removal, and the authorization last encoded. Its
    /// records are kept for the next snapshot.
    public func encodeLine(_ change: NodeStateChange) throws -> [UInt8]? {
        try cache.withLock { cache in
            for id in change.removed { cache.entries.removeValue(forKey: id) }
            guard !change.alarms.isEmpty || !change.removed.isEmpty || change.authorization != cache.authorization else { return nil }
            cache.authorization = change.authorization
            var line = Array(#"{"alarms":["#.utf8)
            for (index, record) in change.alarms.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                line += try encoded(record, in: &cache)
            }
            line += Array(#"],"authorization":"#.utf8)
            CompactJSON.append(string: change.authorization.rawValue, to: &line)
            line += Array(#","generation":\#(change.generation),"removed":["#.utf8)
            for (index, id) in change.removed.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                CompactJSON.append(string: UUIDText.string(id), to: &line)
            }
            line += Array("]}\n".utf8)
            return line
        }
    }

    /// A record's bytes: the cached ones when it is unchanged, else encoded now and cached.
    private func encoded(_ record: AlarmRecord, in cache: inout Cache) throws -> [UInt8] {
        if let cached = cache.entries[record.id] {
            if cached.record.isSameRevision(as: record) { return cached.bytes }
            if cached.record == record {
                // Unchanged, but stamped anew (or not stamped): keep the new stamp, so the next
                // write knows it by its revision again.
                cache.entries[record.id] = Encoded(record: record, bytes: cached.bytes)
                return cached.bytes
            }
        }
        let bytes = try records.encode(record)
        cache.entries[record.id] = Encoded(record: record, bytes: bytes)
        return bytes
    }

    /// Forgets the records of alarms that `state` no longer has.
    private func dropGone(from cache: inout Cache, keeping state: NodeState) {
        // The cache holds every alarm of the state, so more entries than alarms means some are gone.
        if cache.entries.count > state.alarms.count {
            let ids = Set(state.alarms.map(\.id))
            cache.entries = cache.entries.filter { ids.contains($0.key) }
        }
        // A record encoded just after its alarm was removed (an older snapshot still in the
        // writer's hands) puts its configuration back into the shared cache: drop what no alarm
        // of this state has, so removed alarms cannot pile up over months.
        if records.cachedCount > state.alarms.count { records.keepOnly(Set(cache.entries.keys)) }
    }
}
