import DequeModule

/// Messages published while the client is not connected, waiting for the next connection.
///
/// libmosquitto 2.0.11 would queue QoS 1 and 2 publishes made while disconnected without any bound
/// (and lose QoS 0 ones), so the client keeps them here instead:
/// - retained messages, the latest per topic: a later retained publish to a topic replaces the
///   earlier one, so this part is bounded by the number of distinct topics (state, not history);
/// - non-retained messages in a FIFO of at most `limit`, dropping the oldest and counting drops.
///
/// ``drain()`` returns both kinds merged back into publish order. A replaced retained message
/// takes the place of its latest publish.
struct OutgoingBuffer {
    private struct Entry {
        let sequence: UInt64
        let message: MQTTMessage
    }

    let limit: Int
    private var nextSequence: UInt64 = 0
    private var retainedByTopic: [String: Entry] = [:]
    private var nonRetained: Deque<Entry> = []
    /// Non-retained messages dropped since the last ``drain()``.
    private(set) var droppedCount = 0

    init(limit: Int) {
        self.limit = limit
    }

    var count: Int { retainedByTopic.count + nonRetained.count }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ message: MQTTMessage) {
        let entry = Entry(sequence: nextSequence, message: message)
        nextSequence += 1
        if message.retain {
            retainedByTopic[message.topic] = entry
            return
        }
        guard limit > 0 else {
            droppedCount += 1
            return
        }
        if nonRetained.count == limit {
            nonRetained.removeFirst()
            droppedCount += 1
        }
        nonRetained.append(entry)
    }

    /// Empties the buffer and returns its messages in publish order, with the number of
    /// non-retained messages dropped since the previous drain.
    mutating func drain() -> (messages: [MQTTMessage], droppedCount: Int) {
        var retained = retainedByTopic.values.sorted { $0.sequence < $1.sequence }[...]
        var others = nonRetained[...]
        var merged: [MQTTMessage] = []
        merged.reserveCapacity(count)
        while let nextRetained = retained.first, let nextOther = others.first {
            if nextRetained.sequence < nextOther.sequence {
                merged.append(nextRetained.message)
                retained.removeFirst()
            } else {
                merged.append(nextOther.message)
                others.removeFirst()
            }
        }
        merged.append(contentsOf: retained.map(\.message))
        merged.append(contentsOf: others.map(\.message))

        let dropped = droppedCount
        retainedByTopic.removeAll()
        nonRetained.removeAll()
        droppedCount = 0
        return (merged, dropped)
    }
}
