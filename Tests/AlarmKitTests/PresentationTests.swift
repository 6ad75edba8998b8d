import AlarmKit
import Foundation
import Testing

@Suite("The alert's stop button")
struct PresentationTests {
    @Test("print shows an alarm's values, not the insides of the wrappers that write its JSON")
    func printed() {
        let alarm = Alarm(id: UUID(), schedule: nil, countdownDuration: .init(preAlert: 300, postAlert: nil), state: .countdown)
        let text = String(describing: alarm)
        #expect(text.contains("CountdownDuration(_preAlert: 300.0, _postAlert: nil)"), "\(text)")
        #expect(!text.contains("wrappedValue") && !text.contains("ExplicitNull"), "\(text)")
        #expect(String(describing: NodeStatus(state: "online")).contains("_since: nil"))
    }

    @Test("An alert without a stop button gets the node's default one, and writes it")
    func defaultStopButton() throws {
        let alert = AlarmPresentation.Alert(title: "Wake up", secondaryButton: snoozeButton, secondaryButtonBehavior: .countdown)
        #expect(alert.stopButton == AlarmButton(text: "Stop", textColor: .white, systemImageName: "stop.circle"))
        let written = try JSONValue(encoding: alert)
        #expect(written["stopButton"] == .object([
            "text": .string("Stop"), "textColor": .string("#FFFFFF"), "systemImageName": .string("stop.circle"),
        ]))
    }

    @Test("A command's alert may leave the stop button out, or give its own")
    func decoding() throws {
        let without = try AlarmJSON.strictDecoder.decode(AlarmPresentation.Alert.self, from: Data(#"{"title":"Tea"}"#.utf8))
        #expect(without == AlarmPresentation.Alert(title: "Tea"))
        let own = try AlarmJSON.strictDecoder.decode(AlarmPresentation.Alert.self, from: Data(
            ##"{"title":"Tea","stopButton":{"text":"Done","textColor":"#34C759","systemImageName":"stop"}}"##.utf8))
        #expect(own.stopButton == AlarmButton(text: "Done", textColor: .green, systemImageName: "stop"))
    }

    @Test("The iOS 26.0 initializer keeps the app's stop button")
    @available(*, deprecated, message: "tests the deprecated initializer")
    func deprecatedInitializer() {
        let alert = AlarmPresentation.Alert(title: "Tea", stopButton: dismiss, secondaryButton: snoozeButton, secondaryButtonBehavior: .custom)
        #expect(alert.stopButton == dismiss)
        #expect(alert.secondaryButton == snoozeButton && alert.secondaryButtonBehavior == .custom)
    }
}
