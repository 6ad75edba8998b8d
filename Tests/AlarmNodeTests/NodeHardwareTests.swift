import AlarmHardware
import AlarmKit
@testable import AlarmNode
import Foundation
import Logging
import Synchronization
import Testing

/// What `NodeHardware.show` puts on the (simulated) buzzer and LED for an engine's state.
@Suite("Node hardware")
struct NodeHardwareTests {
    /// The simulated outputs, every level the buzzer took, and every change a person would notice.
    final class Outputs: Sendable {
        let buzzer = SimulatedLine()
        let led = SimulatedLine()
        let buzzerLevels = Mutex<[Bool]>([])
        let shown = Mutex<[HardwareShown]>([])

        init() { buzzer.observe { [unowned self] change in buzzerLevels.withLock { $0.append(change.isOn) } } }

        func hardware() -> NodeHardware {
            let parts = NodeHardware.Parts(buzzer: buzzer, led: led, buttons: SimulatedButtons(clock: ContinuousClock()), layout: .twoButtons)
            return NodeHardware(parts: parts, node: LocalAlarmNode(), configuration: NodeConfiguration.Hardware(),
                                publishEvent: { _ in }, onShownChange: { change in self.shown.withLock { $0.append(change) } },
                                logger: Logger(label: "test.node-hardware"))
        }
    }

    /// An alarm that has been alerting for `seconds`, as restored from the state file.
    static func alerting(for seconds: TimeInterval, sound: String) -> AlarmRecord {
        let since = Date().addingTimeInterval(-seconds)
        let alert = AlarmPresentation.Alert(title: "Wake up")
        let configuration = AlarmManager.AlarmConfiguration<JSONValue>(
            schedule: .fixed(since), attributes: AlarmAttributes(presentation: AlarmPresentation(alert: alert), tintColor: .orange),
            sound: .named(sound))
        return AlarmRecord(id: UUID(), configuration: configuration, phase: .alerting(since: since, alertDate: since))
    }

    @Test("An alert restored past its alert timeout never sets the buzzer nor lights the LED: it is over, and is silenced at once")
    func alertPastTimeoutIsNotShown() {
        let outputs = Outputs()
        let engine = AlarmEngine(configuration: .init(alertTimeout: 600), records: [Self.alerting(for: 700, sound: "siren")])
        outputs.hardware().show(engine)
        #expect(outputs.buzzerLevels.withLock { $0 }.allSatisfy { !$0 })
        #expect(outputs.shown.withLock { $0 }.allSatisfy { $0.buzzer == nil && $0.led != .on })
    }

    @Test("Beside an alert past its timeout, one still within it plays its own sound")
    func alertWithinTimeoutPlaysBesideOneOver() {
        let outputs = Outputs()
        let records = [Self.alerting(for: 700, sound: "siren"), Self.alerting(for: 5, sound: "gentle")]
        outputs.hardware().show(AlarmEngine(configuration: .init(alertTimeout: 600), records: records))
        #expect(outputs.shown.withLock { $0 }.map(\.description) == ["buzzer sounding (gentle), LED lit"])
    }
}
