import FoundationEssentials
import OrderedCollections

/// A node's alarm list as a subscriber rebuilds it from the node's retained topics: each
/// (re)subscription replays the documents, then the status; live changes follow.
///
/// The node publishes its status first on each connection and its documents after it, so a
/// subscriber that comes in between (both reconnecting after a broker restart) gets the status
/// before some of the documents. Such a status, which counts more alarms than came, asks the node
/// for its `list`, whose answer ends the replay; meanwhile the list grows and never shrinks, and
/// is known once as many documents came as the status counts. A broker may also replay no
/// document to a wildcard subscription (RabbitMQ before 3.12), or none from another cluster node.
struct RetainedAlarmMirror {
    private(set) var documents: OrderedDictionary<UUID, AlarmDocument> = [:]
    /// Whether the list is whole: since the first replay ended, or the first live change came
    /// where the broker sent no retained status.
    private(set) var isKnown = false
    /// The alarms that came since the subscription, until its replay ends.
    private var replayed: Set<UUID>? = []
    /// The `alarms` count of a status that came before all the documents did; the first such
    /// status of a replay asks for the list.
    private var awaited: Int?
    /// The alarms whose document came since a `list` was asked for. The node takes its list at
    /// once but answers after its earlier writes, while it publishes later changes at once: the
    /// answer must not put back what these documents changed or removed since.
    private var changedSinceListAsked: Set<UUID>?

    /// What a message changes: the list to publish (nil when it is not whole, or unchanged), and
    /// whether to ask the node for its list.
    struct Outcome: Equatable {
        var list: [AlarmDocument]?
        var askForList = false
    }

    /// The connection was lost: the next subscription replays everything again.
    mutating func subscriptionLost() {
        (replayed, awaited, changedSinceListAsked) = ([], nil, nil)
    }

    /// A `list` is asked for: documents from now on are newer than its answer may be.
    mutating func listAsked() { changedSinceListAsked = changedSinceListAsked ?? [] }

    /// An alarm's document (nil: an empty payload, the alarm removed) came. One that names
    /// another alarm than its topic does (anyone can publish it) is no document of this alarm.
    mutating func received(_ document: AlarmDocument?, id: UUID, retained: Bool) -> Outcome {
        documents[id] = document?.id == id ? document : nil
        replayed?.insert(id)
        changedSinceListAsked?.insert(id)
        // As many as the status counted: whole, though an alarm added meanwhile may be among them,
        // so none goes before the node's list (or a status that counts them) says which are gone.
        if let awaited, replayedCount >= awaited { isKnown = true }
        // A live change where the broker replayed no status: the list stands from here on.
        if awaited == nil && !retained { isKnown = true }
        return Outcome(list: isKnown ? Array(documents.values) : nil)
    }

    /// The node's status came.
    mutating func received(_ status: NodeStatus, retained: Bool) -> Outcome {
        guard replayed != nil else { return Outcome() }
        if let count = status.alarms, status.isOnline {
            if replayedCount >= count { return endReplay(pruning: true) }
            defer { awaited = count }
            return Outcome(askForList: awaited == nil)
        }
        // An offline status (or one from a node that gives no count) ends the replay when retained.
        if retained { return endReplay(pruning: true) }
        defer { isKnown = true }
        return Outcome(list: isKnown ? nil : Array(documents.values))
    }

    /// The node's answer to `list`: the whole list, which ends the replay.
    mutating func replace(with list: [AlarmDocument]) -> [AlarmDocument] {
        var listed = OrderedDictionary(uniqueKeysWithValues: list.map { ($0.id, $0) })
        for id in changedSinceListAsked ?? [] { listed[id] = documents[id] }
        (documents, changedSinceListAsked) = (listed, nil)
        return endReplay(pruning: false).list ?? []
    }

    /// The `list` asked for did not come: the replay ends with what came, removing nothing.
    mutating func listUnanswered() -> Outcome {
        awaited == nil ? Outcome() : endReplay(pruning: false)
    }

    /// Whether a status counted more alarms than have come.
    var isMissingDocuments: Bool { awaited.map { replayedCount < $0 } ?? false }

    private var replayedCount: Int { replayed?.count { documents[$0] != nil } ?? 0 }

    private mutating func endReplay(pruning: Bool) -> Outcome {
        if pruning, let replayed { documents = documents.filter { replayed.contains($0.key) } }
        (replayed, awaited, isKnown) = (nil, nil, true)
        return Outcome(list: Array(documents.values))
    }
}
