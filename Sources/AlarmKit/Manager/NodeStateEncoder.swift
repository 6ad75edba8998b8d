import FoundationEssentials
import Synchronization

/// Encodes a ``NodeState`` to the same bytes as `AlarmJSON.encoder`, re-encoding only the
/// records that changed since the previous call.
///
/// The node writes its whole state after every change (group commit shares a write among the
/// changes made meanwhile), but a change touches one record: keeping each record's bytes makes
/// a write cost one record's encoding plus a copy, instead of every record's. The cache holds
/// one encoded copy per alarm (about as many bytes as the state file) and drops the records
/// that are gone at each call.
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
    }

    /// Held for the whole of `encode`: one writer calls it at a time, so it is never contended.
    private let cache = Mutex(Cache())
    private let records: SplicingAlarmEncoder

    /// - Parameter records: encodes the records that changed; share it with whatever encodes
    ///   the same alarms' documents, so each configuration is kept once.
    public init(records: SplicingAlarmEncoder = SplicingAlarmEncoder()) {
        self.records = records
    }

    /// `state` as compact, key-sorted JSON: `{"alarms":[…],"authorization":…,"schemaVersion":…}`,
    /// the order `AlarmJSON.encoder` writes `NodeState`'s keys in.
    ///
    /// A record the engine stamped is known unchanged by its revision alone; others are compared.
    public func encode(_ state: NodeState) throws -> [UInt8] {
        try cache.withLock { cache in
            var bytes = Array(#"{"alarms":["#.utf8)
            bytes.reserveCapacity(cache.lastSize)
            for index in state.alarms.indices {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                if let cached = cache.entries[state.alarms[index].id], cached.record.isSameRevision(as: state.alarms[index]) {
                    bytes += cached.bytes
                } else if let cached = cache.entries[state.alarms[index].id], cached.record == state.alarms[index] {
                    // Unchanged, but stamped anew (or not stamped): keep the new stamp, so the next
                    // write knows it by its revision again.
                    cache.entries[state.alarms[index].id] = Encoded(record: state.alarms[index], bytes: cached.bytes)
                    bytes += cached.bytes
                } else {
                    let record = state.alarms[index]
                    let encoded = try records.encode(record)
                    cache.entries[record.id] = Encoded(record: record, bytes: encoded)
                    bytes += encoded
                }
            }
            // Records of alarms that are gone: the cache holds every alarm of the state, so more
            // entries than alarms means some.
            if cache.entries.count > state.alarms.count {
                let ids = Set(state.alarms.map(\.id))
                cache.entries = cache.entries.filter { ids.contains($0.key) }
            }
            bytes += Array(#"],"authorization":"#.utf8)
            CompactJSON.append(string: state.authorization.rawValue, to: &bytes)
            bytes += Array(#","schemaVersion":\#(state.schemaVersion)}"#.utf8)
            // A record encoded here just after its alarm was removed (an older snapshot still in
            // the writer's hands) puts its configuration back into the shared cache: drop what no
            // alarm of this state has, so removed alarms cannot pile up over months.
            if records.cachedCount > state.alarms.count { records.keepOnly(Set(cache.entries.keys)) }
            cache.lastSize = bytes.count
            return bytes
        }
    }
}
