import AlarmKit
@testable import AlarmNode
import Foundation
import Mosquitto
import Testing

@Suite("Home Assistant's state, a moment after the changes")
struct HomeAssistantMirrorTests {
    let discovery = HomeAssistantDiscovery(prefix: "homeassistant", topics: NodeTopics(node: "bedroom"), nodeID: "bedroom", version: "0.1.0")
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func schedule(on engine: inout AlarmEngine) throws {
        let attributes = AlarmAttributes<JSONValue>(presentation: .init(alert: .init(title: "Tea")), tintColor: .blue)
        _ = try engine.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes), now: now)
    }

    func alarmCount(_ messages: [MQTTMessage], topic: String) throws -> Int? {
        guard let message = messages.first(where: { $0.topic == topic }) else { return nil }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
        return (object["alarms"] as? [Any])?.count ?? object["alarms"] as? Int
    }

    @Test func changesTogetherOnlyWhatDiffersAndEverythingWhenForced() async throws {
        let mirror = HomeAssistantMirror(discovery: discovery, delay: .zero)
        let (batches, sent) = AsyncStream<[MQTTMessage]>.makeStream()
        var engine = AlarmEngine()
        try schedule(on: &engine)
        mirror.update(engine, alarmsChanged: true)
        try schedule(on: &engine)
        mirror.update(engine, alarmsChanged: false)
        let publishing = Task { await mirror.run { sent.yield($0) } }
        defer { publishing.cancel() }
        var received = batches.makeAsyncIterator()

        let first = try #require(await received.next())
        #expect(first.map(\.topic) == [discovery.alarmsTopic, discovery.stateTopic], "the second change kept the first one's list, sent first")
        #expect(try alarmCount(first, topic: discovery.alarmsTopic) == 2, "the latest state, both alarms")
        #expect(try alarmCount(first, topic: discovery.stateTopic) == 2)
        #expect(first.allSatisfy { $0.retain && $0.qos == 1 })

        mirror.update(engine, alarmsChanged: true)  // nothing differs: nothing is sent
        mirror.update(engine, alarmsChanged: false, force: true)
        let forced = try #require(await received.next())
        #expect(forced.map(\.topic) == [discovery.alarmsTopic, discovery.stateTopic], "forced: everything again")
    }
}
