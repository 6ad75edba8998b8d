import DequeModule

/// Messages published while the client is not connected, waiting for the next connection.
///
/// libmosquitto 2.0.11 would queue QoS 1 and 2 publishes made while disconnected without any bound
/// (and lose QoS 0 ones), so the client keeps them here instead: retained messages, the latest per
/// topic (state, not history, so bounded by the number of topics), and non-retained messages in a
/// FIFO of at most `limit` that drops its oldest and counts the drops. ``drain()`` returns both in
/// publish order; a replaced retained message takes the place of its latest publish.
struct OutgoingBuffer {
    private typealias Entry = (sequence: UInt64, message: MQTTMessage)

    let limit: Int
    private var nextSequence: UInt64 = 0
    private var retainedByTopic: [String: Entry] = [:]
    private var nonRetained: Deque<Entry> = []
    /// Non-retained messages dropped since the last ``drain()``.
    private(set) var droppedCount = 0

    init(limit: Int) { self.limit = limit }

    var count: Int { retainedByTopic.count + nonRetained.count }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ message: MQTTMessage) {
        nextSequence += 1
        guard !message.retain else {
            retainedByTopic[message.topic] = (nextSequence, message)
            return
        }
        nonRetained.append((nextSequence, message))
        if nonRetained.count > limit {
            nonRetained.removeFirst()
            droppedCount += 1
        }
    }

    /// Removes the non-retained messages `isWithdrawn` picks.
    mutating func withdraw(where isWithdrawn: (MQTTMessage) -> Bool) {
        nonRetained.removeAll { isWithdrawn($0.message) }
    }

    /// Empties the buffer and returns its messages in publish order, with the number of
    /// non-retained messages dropped since the previous drain.
    mutating func drain() -> (messages: [MQTTMessage], droppedCount: Int) {
        let entries = Array(retainedByTopic.values) + nonRetained
        defer { self = OutgoingBuffer(limit: limit) }
        return (entries.sorted { $0.sequence < $1.sequence }.map(\.message), droppedCount)
    }
}
