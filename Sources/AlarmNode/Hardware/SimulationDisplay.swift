import AlarmHardware
import AlarmKit
import LinuxSystem
import Synchronization

/// In simulation mode: publishes the virtual buzzer and LED, retained, on `<base>/sim/outputs`:
/// every transition, even one that is over by the time it is shown (an alarm stopped a millisecond
/// after it sounded still shows its buzzer on, then off). The virtual buttons' edges go to
/// `<base>/sim/buttons`. Both carry `at`, when the change happened, in nanoseconds on the daemon's
/// monotonic clock since the simulation started: the time from a button's release to the buzzer
/// going quiet is measured with them. The outputs also carry `realtime`, the same moment on the
/// wall clock (nanoseconds since 1970), to compare with when an alarm was due.
///
/// Each message is handed to the bridge on the thread that changed the line or injected the
/// edge, so that the outputs of one change leave in the order they were set, before the node
/// goes on to publish the change itself.
final class SimulationDisplay: Sendable {
    /// `<base>/sim/buttons`: `{"at":…,"button":"stop","pressed":true}`.
    private struct ButtonMessage: Encodable {
        var button: String
        var pressed: Bool
        var at: Int64
    }

    /// `<base>/sim/outputs`: `{"at":…,"buzzer":true,"led":false,"realtime":…}` (`shown` keeps 0 for the times).
    private struct Outputs: Encodable, Equatable {
        var buzzer: Bool
        var led: Bool
        var at: Int64 = 0
        var realtime: Int64 = 0
    }

    private let bridge: MQTTBridge
    private let topics: NodeTopics
    private let started = ContinuousClock.now
    /// The levels last published; held while one is published, so messages leave in order.
    private let shown: Mutex<Outputs>

    /// Publishes the current outputs, then every change of `simulation`'s lines and buttons,
    /// for as long as the process runs.
    static func start(_ simulation: HardwareParts.Simulation, bridge: MQTTBridge, topics: NodeTopics) {
        let display = SimulationDisplay(bridge: bridge, topics: topics,
                                        current: Outputs(buzzer: simulation.buzzer.isOn, led: simulation.led.isOn))
        simulation.buzzer.observe { change in display.show(at: change.at) { $0.buzzer = change.isOn } }
        simulation.led.observe { change in display.show(at: change.at) { $0.led = change.isOn } }
        simulation.buttons.observeInjectedEdges { edge, at in display.publish(edge, at: at) }
    }

    private init(bridge: MQTTBridge, topics: NodeTopics, current: Outputs) {
        self.bridge = bridge
        self.topics = topics
        shown = Mutex(current)
        publish(current, at: started)
    }

    private func show(at instant: ContinuousClock.Instant, _ change: (inout Outputs) -> Void) {
        shown.withLock { shown in
            let before = shown
            change(&shown)
            if shown != before { publish(shown, at: instant) }
        }
    }

    private func publish(_ outputs: Outputs, at instant: ContinuousClock.Instant) {
        let message = Outputs(buzzer: outputs.buzzer, led: outputs.led, at: nanosecondsSinceStart(at: instant),
                              realtime: ClockReading.wallClockNanoseconds(at: instant))
        bridge.publish(.init(topic: topics.simulatedOutputs, payload: MQTTBridge.encode(message), qos: 1, retain: true))
    }

    private func publish(_ edge: ButtonEdge, at instant: ContinuousClock.Instant) {
        let message = ButtonMessage(button: edge.button.rawValue, pressed: edge.pressed,
                                    at: nanosecondsSinceStart(at: instant))
        bridge.publish(.init(topic: topics.simulatedButtons, payload: MQTTBridge.encode(message), qos: 1))
    }

    private func nanosecondsSinceStart(at instant: ContinuousClock.Instant) -> Int64 {
        max(.zero, started.duration(to: instant)).inNanoseconds
    }
}
