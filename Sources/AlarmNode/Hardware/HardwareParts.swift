import AlarmHardware
import AlarmKit
import FoundationEssentials
import GPIO
import LinuxSystem
import Logging

/// Opens the configured GPIO lines, or makes the simulation.
public enum HardwareParts {
    /// The simulated parts and what shows them.
    public struct Simulation: Sendable {
        public let buzzer: SimulatedLine
        public let led: SimulatedLine
        public let buttons: SimulatedButtons<TimerFDClock>

        /// Presses a virtual button for `duration` seconds (from `<base>/sim/press`).
        public func press(_ button: String, duration: TimeInterval) async {
            try? await buttons.press(button == "stop" ? .stop : .snooze, duration: .seconds(duration))
        }
    }

    /// The parts to use: GPIO when configured, else the simulation. In `auto` mode the simulation
    /// stands in only on a machine with no GPIO chip at all (a PC, a container): where chips
    /// exist, a chip name that matches none of them is a mistake that would leave the node
    /// silent, so it is refused like any other GPIO error.
    ///
    /// The simulation has the configured buttons: without a snooze button, one button that snoozes
    /// with a short press and stops with a long one, as on the real board. A GPIO failure is a
    /// reason the daemon cannot start: its message names the chip and line and what to check.
    public static func make(
        _ configuration: NodeConfiguration.Hardware, deviceDirectory: String = "/dev", logger: Logger
    ) throws(StartupError) -> (parts: NodeHardware.Parts, simulation: Simulation?) {
        if configuration.mode != .simulated {
            do {
                return (try openGPIO(configuration, logger: logger), nil)
            } catch let error where error.code == .chipNotFound {
                let chips = GPIOChip.deviceNames(in: deviceDirectory)
                guard configuration.mode == .auto, chips.isEmpty else {
                    throw StartupError(chipNotFoundMessage(error, chips: chips, mode: configuration.mode))
                }
                logger.notice("no GPIO chip on this machine; using simulated hardware", metadata: ["chip": "\(configuration.chip)"])
            } catch { throw StartupError(error.message) }
        }
        let simulation = Simulation(buzzer: SimulatedLine(), led: SimulatedLine(),
                                    buttons: SimulatedButtons(clock: TimerFDClock()))
        let parts = NodeHardware.Parts(buzzer: simulation.buzzer, led: simulation.led, buttons: simulation.buttons,
                                       layout: configuration.snoozeButton == nil ? .singleButton : .twoButtons)
        return (parts, simulation)
    }

    /// The chip error, with the chips this machine has and how to choose.
    static func chipNotFoundMessage(_ error: GPIOError, chips: [String], mode: NodeConfiguration.Hardware.Mode) -> String {
        guard !chips.isEmpty else {
            return "\(error.message); this machine has no GPIO chip: set hardware.mode = \"simulated\" (or \"auto\") to run without GPIO"
        }
        let simulation = mode == .auto ? "" : ", or hardware.mode = \"simulated\" to run without GPIO"
        return "\(error.message); this machine has \(chips.joined(separator: ", ")): set hardware.chip to one of them (by name, path or label)\(simulation)"
    }

    private static func openGPIO(_ configuration: NodeConfiguration.Hardware, logger: Logger) throws(GPIOError) -> NodeHardware.Parts {
        let chip = try GPIOChip(GPIOChipSelector(configuration.chip), logger: logger)
        func lineConfiguration(_ line: NodeConfiguration.Hardware.Line) -> GPIOLineConfiguration {
            GPIOLineConfiguration(GPIOLineSelector(line.line), activeLow: line.activeLow, bias: GPIOBias(rawValue: line.bias) ?? .asIs)
        }
        // The configuration reader guarantees a buzzer and a stop button.
        let buzzer = try chip.requestOutput(lineConfiguration(configuration.buzzer!), consumer: "alarmd-buzzer")
        let led = try configuration.led.map { line throws(GPIOError) in
            try chip.requestOutput(lineConfiguration(line), consumer: "alarmd-led")
        }
        let stop = try chip.requestInput(lineConfiguration(configuration.stopButton!), consumer: "alarmd-stop")
        let snooze = try configuration.snoozeButton.map { line throws(GPIOError) in
            try chip.requestInput(lineConfiguration(line), consumer: "alarmd-snooze")
        }
        logger.info("GPIO opened", metadata: ["chip": "\(chip.name)", "label": "\(chip.label)"])
        return NodeHardware.Parts(buzzer: buzzer, led: led, buttons: GPIOButtons(stop: stop, snooze: snooze, logger: logger),
                                  layout: snooze == nil ? .singleButton : .twoButtons)
    }
}
