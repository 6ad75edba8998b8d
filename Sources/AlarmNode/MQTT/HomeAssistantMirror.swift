import AlarmKit
import LinuxSystem
import Mosquitto
import Synchronization

/// What Home Assistant's entities show (`ha/state`, `ha/alarms`), published a moment after the
/// changes that made it, the changes of that moment together, and only what differs.
///
/// Why a moment later: the list of alarms visits every alarm, and built at once it took the CPU
/// from the change's own messages (an `alerting` event reached its subscriber later). Home
/// Assistant's pages lose nothing to 20 ms.
final class HomeAssistantMirror: Sendable {
    private struct Change {
        var engine: AlarmEngine
        var alarmsChanged: Bool
        var force: Bool
    }

    private struct Shown {
        var state: HomeAssistantState?
        var alarms: HomeAssistantAlarmList?
    }

    private let discovery: HomeAssistantDiscovery
    private let delay: Duration
    /// The latest change not yet published, with what the changes before it asked for.
    private let pending = Mutex<Change?>(nil)
    /// What was published last; only ``run(send:)`` reads and writes it.
    private let shown = Mutex(Shown())
    private let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    init(discovery: HomeAssistantDiscovery, delay: Duration = .milliseconds(20)) {
        self.discovery = discovery
        self.delay = delay
        (changes, changed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Notes the node's state after a change; `alarmsChanged` when an alarm's document changed
    /// or one went, `force` to publish everything again (a new connection, Home Assistant's restart).
    func update(_ engine: AlarmEngine, alarmsChanged: Bool, force: Bool = false) {
        pending.withLock { earlier in
            earlier = Change(engine: engine, alarmsChanged: alarmsChanged || earlier?.alarmsChanged == true,
                             force: force || earlier?.force == true)
        }
        changed.yield()
    }

    /// Publishes the updates through `send` until cancelled.
    func run(send: @Sendable ([MQTTMessage]) -> Void) async {
        for await _ in changes {
            guard (try? await TimerFDClock().sleep(for: delay)) != nil else { return }
            guard let change = pending.withLock({ $0.take() }) else { continue }
            let messages = messages(for: change)
            if !messages.isEmpty { send(messages) }
        }
    }

    /// The messages of what changed since the last ones (all, when `force`). The list of alarms
    /// is built only when an alarm changed, and goes first: an automation that Ringing (or the
    /// Alarms count) starts then finds the alarm in the list.
    private func messages(for change: Change) -> [MQTTMessage] {
        shown.withLock { shown in
            var messages: [MQTTMessage] = []
            func publish<Value: Encodable & Equatable>(_ value: Value, on topic: String, over last: inout Value?) {
                guard change.force || last != value else { return }
                messages.append(MQTTMessage(topic: topic, payload: MQTTBridge.encode(value), qos: 1, retain: true))
                last = value
            }
            if change.alarmsChanged || change.force {
                publish(HomeAssistantAlarmList(engine: change.engine), on: discovery.alarmsTopic, over: &shown.alarms)
            }
            publish(HomeAssistantState(engine: change.engine), on: discovery.stateTopic, over: &shown.state)
            return messages
        }
    }
}
