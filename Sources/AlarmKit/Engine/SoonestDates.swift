import FoundationEssentials
import HeapModule
import OrderedCollections

/// The soonest of one date per alarm, in O(log n) per change: a heap whose entries go stale
/// when their alarm changes, instead of being looked for and removed.
///
/// Which date an alarm has is a function of the alarm (`dateOf`, nil for none). The engine adds
/// an alarm's new date whenever it stores the alarm and calls `tidy` after every operation;
/// `tidy` drops stale entries from the top (so `soonest` is always a live one) and rebuilds the
/// heap when stale entries pile up, so it stays O(alarms) in size.
struct SoonestDates: Sendable {
    struct Entry: Comparable, Sendable {
        var date: Date
        var id: UUID

        /// Ties by id, in the order of their text (UUID compares its bytes as the text does),
        /// without building the text.
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.date != rhs.date ? lhs.date < rhs.date : lhs.id < rhs.id
        }
    }

    private var heap = Heap<Entry>()

    /// The soonest entry; live after `tidy`.
    var soonest: Entry? { heap.min }

    /// How many entries, stale ones included.
    var count: Int { heap.count }

    /// Adds alarm `id`'s date, if it has one now; its earlier entries go stale.
    mutating func add(_ date: Date?, for id: UUID) {
        if let date { heap.insert(Entry(date: date, id: id)) }
    }

    /// Removes and returns the soonest entry, live or not.
    mutating func removeSoonest() -> Entry? {
        heap.popMin()
    }

    /// Replaces every entry with the current date of each of `records` (`dateOf`).
    mutating func rebuild(from records: OrderedDictionary<UUID, AlarmRecord>, dateOf: (AlarmRecord) -> Date?) {
        heap = Heap(records.values.compactMap { record in dateOf(record).map { Entry(date: $0, id: record.id) } })
    }

    /// Rebuilds when stale entries outnumber the alarms by far, then drops stale entries from
    /// the top, so that `soonest` is live.
    mutating func tidy(in records: OrderedDictionary<UUID, AlarmRecord>, dateOf: (AlarmRecord) -> Date?) {
        if heap.count > 2 * records.count + 64 { rebuild(from: records, dateOf: dateOf) }
        while let top = heap.min, records[top.id].flatMap(dateOf) != top.date { heap.removeMin() }
    }
}
