import AlarmKit
import FoundationEssentials
import Mosquitto

/// The MQTT messages that carry out a change's effects (docs/mqtt.md): a pure function of the
/// effects, apart from ``MQTTBridge``, which sends them.
struct EffectMessages {
    /// Retained documents and their removals, events, and the intents' messages, in effect order.
    var messages: [MQTTMessage] = []
    /// Which alarms the node holds after the change, in effect order: a removal followed by a
    /// new document under the same id ends known.
    var knownChanges: [(id: UUID, known: Bool)] = []
    /// The intents run or refused (`refusal` says why), for the log.
    var intents: [(alarmID: UUID, topic: String, refusal: String?)] = []

    init(_ effects: [AlarmEffect], topics: NodeTopics) {
        for effect in effects {
            switch effect {
            case .changed(let document):
                knownChanges.append((document.id, true))
                messages.append(MQTTMessage(topic: topics.alarm(document.id), payload: MQTTBridge.encode(document), qos: 1, retain: true))
            case .removed(let id):
                knownChanges.append((id, false))
                messages.append(MQTTMessage(topic: topics.alarm(id), payload: [], qos: 1, retain: true))
            case .event(let event):
                if event.name == .intent, let alarmID = event.alarmID, let topic = event.details["topic"]?.string {
                    intents.append((alarmID, topic, event.details["refused"]?.string))
                }
                messages.append(MQTTMessage(topic: topics.events, payload: MQTTBridge.encode(event), qos: 1, retain: false))
            case .runIntent(let intent, let alarmID):
                guard case .publish(let topic, _, let retain) = intent else { continue }
                messages.append(MQTTMessage(topic: topic, string: intent.payload(for: alarmID), qos: 1, retain: retain))
            case .alertStarted, .alertEnded:
                break
            }
        }
    }
}
