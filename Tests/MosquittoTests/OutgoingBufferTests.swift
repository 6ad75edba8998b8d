import Testing

@testable import Mosquitto

@Suite("Outgoing buffer while disconnected")
struct OutgoingBufferTests {
    private func message(_ topic: String, _ text: String, retain: Bool = false) -> MQTTMessage {
        MQTTMessage(topic: topic, string: text, retain: retain)
    }

    @Test("a later retained publish to a topic replaces the earlier one")
    func retainedLatestPerTopic() {
        var buffer = OutgoingBuffer(limit: 10)
        buffer.append(message("state/a", "1", retain: true))
        buffer.append(message("state/b", "x", retain: true))
        buffer.append(message("state/a", "2", retain: true))

        let (messages, dropped) = buffer.drain()
        #expect(messages.map(\.payloadString) == ["x", "2"])
        #expect(dropped == 0)
        #expect(buffer.isEmpty)
    }

    @Test("non-retained messages are a FIFO that drops its oldest beyond the limit and counts the drops")
    func boundedFIFO() {
        var buffer = OutgoingBuffer(limit: 3)
        for index in 1...5 {
            buffer.append(message("events", "\(index)"))
        }
        #expect(buffer.droppedCount == 2)

        let (messages, dropped) = buffer.drain()
        #expect(messages.map(\.payloadString) == ["3", "4", "5"])
        #expect(dropped == 2)
        #expect(buffer.droppedCount == 0)
    }

    @Test("withdrawn messages are not sent; retained ones and the others stay, in order")
    func withdrawal() {
        var buffer = OutgoingBuffer(limit: 10)
        buffer.append(message("cmd/cancel", "1"))
        buffer.append(message("state/a", "v1", retain: true))
        buffer.append(message("cmd/pause", "2"))
        buffer.withdraw { $0.topic.hasPrefix("cmd/cancel") || $0.retain }
        #expect(buffer.drain().messages.map(\.payloadString) == ["v1", "2"])
    }

    @Test("retained and non-retained messages come out in publish order")
    func mergedOrder() {
        var buffer = OutgoingBuffer(limit: 3)
        buffer.append(message("state", "v1", retain: true))
        buffer.append(message("events", "1"))
        buffer.append(message("state", "v2", retain: true))
        buffer.append(message("events", "2"))
        buffer.append(message("events", "3"))
        buffer.append(message("state", "v3", retain: true))
        buffer.append(message("events", "4"))
        buffer.append(message("events", "5"))

        let (messages, dropped) = buffer.drain()
        #expect(messages.map(\.payloadString) == ["3", "v3", "4", "5"])
        #expect(dropped == 2)
    }

    @Test("a limit of zero keeps only retained state")
    func zeroLimit() {
        var buffer = OutgoingBuffer(limit: 0)
        buffer.append(message("events", "1"))
        buffer.append(message("state", "on", retain: true))

        let (messages, dropped) = buffer.drain()
        #expect(messages.map(\.payloadString) == ["on"])
        #expect(dropped == 1)
    }
}
