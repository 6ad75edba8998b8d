import AlarmKit
import Foundation
import Mosquitto
import MosquittoTestSupport
import Synchronization

/// A test's MQTT client of one node: sends commands, and waits (with a deadline) for messages
/// anywhere in everything it received, without consuming them.
final class NodeClient: Sendable {
    let client: MQTTClient
    let topics: NodeTopics
    let replyTopic = "test/replies/\(UUID().uuidString)"
    private let received = Mutex<[MQTTMessage]>([])
    private let changes = Broadcast<Int>(0)
    /// How many `.connected` events came: each comes once the broker acknowledged the subscriptions.
    private let connections = Broadcast<Int>(0)

    private init(client: MQTTClient, topics: NodeTopics) {
        self.client = client
        self.topics = topics
    }

    /// Connects a client for `node`, and returns once the broker acknowledged its subscriptions
    /// (`.connected`): `isConnected` is true before that, and a message published meanwhile by
    /// another client (a node's event) could pass unseen. A test that freezes the broker passes a
    /// `keepAlive` longer than the freeze: a client that gives up reconnects with a clean session
    /// and misses the events published meanwhile.
    static func connect(broker: TestBroker, node: String, clients: TestClients,
                        protocolSetting: MQTTProtocolSetting = .auto, keepAlive: Int = 5) async throws -> NodeClient {
        let configuration = broker.clientConfiguration(clientID: "test-\(UUID().uuidString.prefix(8))", protocolSetting: protocolSetting,
                                                       keepAlive: keepAlive)
        let client = try MQTTClient(configuration: configuration, logger: TestClients.logger("test-client"))
        clients.adopt(client)
        let nodeClient = NodeClient(client: client, topics: NodeTopics(node: node))
        for filter in ["\(nodeClient.topics.base)/#", "\(nodeClient.replyTopic)", "home/#"] {
            try client.subscribe(filter, qos: 1)
        }
        try client.connect()
        Task {
            for await event in client.events {
                switch event {
                case .message(let message):
                    let count = nodeClient.received.withLock { $0.append(message); return $0.count }
                    nodeClient.changes.send(count)
                case .connected:
                    nodeClient.connections.send(nodeClient.connections.value + 1)
                default:
                    continue
                }
            }
        }
        try await nodeClient.waitForConnection(beyond: 0)
        return nodeClient
    }

    /// How many times the client connected so far: pass it to ``waitForConnection(beyond:within:)``.
    var connectionCount: Int { connections.value }

    /// Waits for a connection after the first `count`, reported once its subscriptions were acknowledged.
    func waitForConnection(beyond count: Int, within timeout: Duration = .seconds(10)) async throws {
        let connected = await Self.first(within: timeout) { () async -> Bool? in
            for await value in self.connections.stream() where value > count { return true }
            return nil
        }
        guard connected != nil else { throw TestSupportError("the test client did not connect (or subscribe) within \(timeout)") }
    }

    /// What `search` returns, unless `timeout` passes first (then nil, and `search` is cancelled).
    private static func first<Value: Sendable>(within timeout: Duration, _ search: @escaping @Sendable () async -> Value?) async -> Value? {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask { await search() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The messages that arrived after the first `after` ones.
    func received(after: Int) -> [MQTTMessage] {
        received.withLock { Array($0.dropFirst(after)) }
    }

    /// How many messages arrived so far: pass it as `after` to wait only for later ones.
    var count: Int { received.withLock { $0.count } }

    /// Waits for a message after the first `after` ones that `match` accepts.
    @discardableResult
    func waitForMessage(
        _ description: String, after: Int = 0, within timeout: Duration = .seconds(10),
        where match: @escaping @Sendable (MQTTMessage) -> Bool
    ) async throws -> MQTTMessage {
        let found = await Self.first(within: timeout) { () async -> MQTTMessage? in
            for await _ in self.changes.stream() {
                if let found = self.received.withLock({ $0.dropFirst(after).first(where: match) }) { return found }
            }
            return nil
        }
        guard let found else { throw TestSupportError("no \(description) within \(timeout)") }
        return found
    }

    /// Waits for the node's last will (`{"state":"offline"}` on its status topic) after the first
    /// `after` messages. The broker sends it once the killed daemon's connection is gone, after
    /// everything that daemon published; so a status that arrives later (the next daemon's
    /// "online") cannot be one of the killed daemon's, still on its way.
    func waitForWill(after: Int, within timeout: Duration = .seconds(10)) async throws {
        try await waitForMessage("the node's last will", after: after, within: timeout) {
            $0.topic == self.topics.status && Self.object($0.payload)?["state"] == .string("offline")
        }
    }

    /// The next event named `name` (after the first `after` messages).
    func event(_ name: String, alarmID: UUID? = nil, after: Int = 0, within timeout: Duration = .seconds(10)) async throws -> [String: JSONValue] {
        let message = try await waitForMessage("event \(name)", after: after, within: timeout) { message in
            guard message.topic == self.topics.events, let object = Self.object(message.payload),
                  object["event"] == .string(name) else { return false }
            return alarmID.map { object["alarmID"] == .string($0.uuidString) } ?? true
        }
        return Self.object(message.payload)!
    }

    /// The latest retained document of `id` satisfying `match`.
    func document(_ id: UUID, after: Int = 0, within timeout: Duration = .seconds(10),
                  where match: @escaping @Sendable (AlarmDocument) -> Bool) async throws -> AlarmDocument {
        let message = try await waitForMessage("document of \(id)", after: after, within: timeout) { message in
            guard message.topic == self.topics.alarm(id), !message.payload.isEmpty,
                  let document = try? AlarmJSON.decoder.decode(AlarmDocument.self, from: Data(message.payload)) else { return false }
            return match(document)
        }
        return try AlarmJSON.decoder.decode(AlarmDocument.self, from: Data(message.payload))
    }

    /// Sends a command with `replyTo` and a `correlationID` in the payload, and returns the reply.
    func request(_ operation: String, _ fields: [String: JSONValue] = [:], within timeout: Duration = .seconds(10)) async throws -> [String: JSONValue] {
        let correlation = UUID().uuidString
        var payload = fields
        payload["replyTo"] = .string(replyTopic)
        payload["correlationID"] = .string(correlation)
        return try await send(operation, payload: Array(try AlarmJSON.encoder.encode(JSONValue.object(payload))),
                              correlation: correlation, within: timeout)
    }

    /// Sends a raw payload with `replyTo` set by MQTT v5 properties and returns the reply.
    func requestV5(_ operation: String, payload: [UInt8]) async throws -> (reply: [String: JSONValue], correlationData: [UInt8]?) {
        let correlation = UUID().uuidString
        let before = count
        try client.publish(MQTTMessage(topic: "\(topics.base)/cmd/\(operation)", payload: payload, qos: 1,
                                       responseTopic: replyTopic, correlationData: Array(correlation.utf8)))
        let reply = try await waitForMessage("v5 reply to \(operation)", after: before) { message in
            message.topic == self.replyTopic && message.correlationData == Array(correlation.utf8)
        }
        return (Self.object(reply.payload) ?? [:], reply.correlationData)
    }

    private func send(_ operation: String, payload: [UInt8], correlation: String, within timeout: Duration) async throws -> [String: JSONValue] {
        let before = count
        try client.publish(MQTTMessage(topic: "\(topics.base)/cmd/\(operation)", payload: payload, qos: 1))
        let reply = try await waitForMessage("reply to \(operation)", after: before, within: timeout) { message in
            message.topic == self.replyTopic && Self.object(message.payload)?["correlationID"] == .string(correlation)
        }
        return Self.object(reply.payload) ?? [:]
    }

    static func object(_ payload: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(payload)) else { return nil }
        return object
    }
}

/// A configuration document as commands carry it.
func configurationJSON(
    preAlert: Double? = nil, postAlert: Double? = nil, schedule: String = "null", title: String = "Tea",
    secondary: String? = nil, stopIntent: String = "null"
) -> JSONValue {
    let secondaryButton = secondary.map { _ in ##"{"text":"Again","textColor":"#FFFFFF","systemImageName":"repeat"}"## } ?? "null"
    let behavior = secondary.map { "\"\($0)\"" } ?? "null"
    let text = """
    {"schedule":\(schedule),
     "countdownDuration":{"preAlert":\(preAlert.map { "\($0)" } ?? "null"),"postAlert":\(postAlert.map { "\($0)" } ?? "null")},
     "attributes":{"presentation":{"alert":{"title":"\(title)","stopButton":{"text":"Done","textColor":"#FFFFFF","systemImageName":"stop"},
       "secondaryButton":\(secondaryButton),"secondaryButtonBehavior":\(behavior)}},"tintColor":"#34C759"},
     "stopIntent":\(stopIntent)}
    """
    return try! JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
}
