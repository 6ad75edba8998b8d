import AlarmKit
import FoundationEssentials
import Synchronization

/// Encodes the reply to `list`, reusing each document's bytes until the document changes.
///
/// Why it exists: Foundation's `JSONEncoder` takes tens of µs for a document with a full
/// presentation, and a `list` of 100 alarms encoded whole missed SPEC §9's budget. A document
/// changes only when its alarm does, so its bytes are kept and compared by value.
///
/// Every byte still comes from ``AlarmJSON``'s encoder: the reply is encoded with no documents
/// (its keys sorted, so it begins `{"alarms":[]`) and the documents' bytes go into that array.
final class ListReplyEncoder: Sendable {
    /// The bytes of the documents of the last `list`; one `list` at a time reads and renews them.
    private let lastList = Mutex<[UUID: (document: AlarmDocument, bytes: [UInt8])]>([:])

    private static let opening = Array(#"{"alarms":["#.utf8)

    /// The same bytes as `NodeReply.alarms(documents).payload(correlationID:node:)`.
    func payload(_ documents: [AlarmDocument], correlationID: JSONValue?, node: String?) -> [UInt8] {
        let empty = NodeReply.alarms([]).payload(correlationID: correlationID, node: node)
        precondition(empty.starts(with: Self.opening + [UInt8(ascii: "]")]), "a list reply's first key is alarms")
        let items = lastList.withLock { kept in
            var renewed = [UUID: (document: AlarmDocument, bytes: [UInt8])](minimumCapacity: documents.count)
            let items = documents.map { document in
                let encoded = kept[document.id].flatMap { $0.document == document ? $0 : nil }
                    ?? (document: document, bytes: MQTTBridge.encode(document))
                renewed[document.id] = encoded
                return encoded.bytes
            }
            kept = renewed
            return items
        }
        var payload = Self.opening
        payload.reserveCapacity(empty.count + items.reduce(items.count) { $0 + $1.count })
        for (index, item) in items.enumerated() {
            if index > 0 { payload.append(UInt8(ascii: ",")) }
            payload += item
        }
        payload += empty[Self.opening.count...]
        return payload
    }
}
