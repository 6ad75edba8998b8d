import FoundationEssentials

/// One entry of the node's state journal: what changed since the entry before it (or since the
/// snapshot, for the first). Records are whole, so applying an entry twice changes nothing.
///
/// The state is kept as a snapshot (``NodeState``) and a journal of these, one JSON object a
/// line, behind a header line naming the snapshot's ``NodeState/journalGeneration``: a change
/// appends its records instead of rewriting every alarm.
public struct NodeStateChange: Sendable, Hashable, Codable {
    /// The records added or changed, whole.
    public var alarms: [AlarmRecord]
    public var authorization: AlarmManager.AuthorizationState
    /// The journal generation the entry belongs to (the snapshot's ``NodeState/journalGeneration``):
    /// a crash while the file grew can leave blocks of an older journal after its end, and
    /// replay stops at the first line of another generation.
    public var generation: UInt64
    /// The alarms that are gone.
    public var removed: [UUID]

    public init(alarms: [AlarmRecord], authorization: AlarmManager.AuthorizationState, removed: [UUID], generation: UInt64 = 0) {
        self.alarms = alarms
        self.authorization = authorization
        self.generation = generation
        self.removed = removed
    }

    /// The journal's first line: `{"journalGeneration":<generation>}` and a newline.
    public static func journalHeader(generation: UInt64) -> [UInt8] {
        Array(#"{"journalGeneration":\#(generation)}"#.utf8) + [UInt8(ascii: "\n")]
    }

    /// The generation a journal header line names, or nil when the line is not a header.
    public static func generation(inJournalHeader line: some BidirectionalCollection<UInt8>) -> UInt64? {
        let prefix = Array(#"{"journalGeneration":"#.utf8)
        guard line.count > prefix.count + 1, line.starts(with: prefix), line.last == UInt8(ascii: "}") else { return nil }
        let digits = line.dropFirst(prefix.count).dropLast()
        guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }
}

extension NodeState {
    /// The state with `changes` applied in order: changed records replace their alarm where it
    /// stands, new ones are added at the end, removed ones are dropped.
    public func applying(_ changes: some Sequence<NodeStateChange>) -> NodeState {
        var state = self
        var alarms: [AlarmRecord?] = state.alarms
        var positions = Dictionary(state.alarms.indices.map { (state.alarms[$0].id, $0) }, uniquingKeysWith: { $1 })
        for change in changes {
            for record in change.alarms {
                if let position = positions[record.id] {
                    alarms[position] = record
                } else {
                    positions[record.id] = alarms.count
                    alarms.append(record)
                }
            }
            for id in change.removed {
                if let position = positions.removeValue(forKey: id) { alarms[position] = nil }
            }
            state.authorization = change.authorization
        }
        state.alarms = alarms.compactMap { $0 }
        return state
    }
}
