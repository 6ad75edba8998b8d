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
    private struct Encoded {
        let record: AlarmRecord
        let bytes: [UInt8]
    }

    private let cache = Mutex<[UUID: Encoded]>([:])
    private let records: SplicingAlarmEncoder

    /// - Parameter records: encodes the records that changed; share it with whatever encodes
    ///   the same alarms' documents, so each configuration is kept once.
    public init(records: SplicingAlarmEncoder = SplicingAlarmEncoder()) {
        self.records = records
    }

    /// `state` as compact, key-sorted JSON: `{"alarms":[…],"authorization":…,"schemaVersion":…}`,
    /// the order `AlarmJSON.encoder` writes `NodeState`'s keys in.
    public func encode(_ state: NodeState) throws -> [UInt8] {
        let previous = cache.withLock { $0 }
        var current: [UUID: Encoded] = [:]
        current.reserveCapacity(state.alarms.count)
        var bytes = Array(#"{"alarms":["#.utf8)
        for (index, record) in state.alarms.enumerated() {
            let encoded: Encoded
            if let cached = previous[record.id], cached.record == record {
                encoded = cached
            } else {
                encoded = Encoded(record: record, bytes: try records.encode(record))
            }
            current[record.id] = encoded
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += encoded.bytes
        }
        bytes += Array(#"],"authorization":"#.utf8)
        bytes += try AlarmJSON.encoder.encode(state.authorization)
        bytes += Array(#","schemaVersion":\#(state.schemaVersion)}"#.utf8)
        cache.withLock { $0 = current }
        // A record encoded here just after its alarm was removed (an older snapshot still in
        // the writer's hands) puts its configuration back into the shared cache: drop what no
        // alarm of this state has, so removed alarms cannot pile up over months.
        if records.cachedCount > state.alarms.count { records.keepOnly(Set(current.keys)) }
        return bytes
    }
}
