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
        if let problem = configuration.timingProblem { logger.warning("every button press is long", metadata: ["problem": "\(problem)"]) }
        if configuration.mode == .simulated, case let chips = GPIOChip.deviceNames(in: deviceDirectory), !chips.isEmpty {
            logger.warning("hardware.mode is simulated on a machine with GPIO chips: no buzzer will sound",
                           metadata: ["chips": "\(chips.joined(separator: ", "))"])
        }
        if configuration.mode != .simulated {
            do {
                return (try openGPIO(configuration, logger: logger), nil)
            } catch let error where error.code == .chipNotFound {
                let chips = GPIOChip.deviceNames(in: deviceDirectory)
                guard configuration.mode == .auto, chips.isEmpty else {
                    throw StartupError(chipNotFoundMessage(error, chips: chips, configuration))
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
    static func chipNotFoundMessage(_ error: GPIOError, chips: [String], _ configuration: NodeConfiguration.Hardware) -> String {
        guard !chips.isEmpty else {
            return "no GPIO chip \(GPIOChipSelector(configuration.chip)): this machine has no GPIO chip (no /dev/gpiochip*): set "
                + "hardware.mode = \"simulated\" (or \"auto\"), or start alarmd with --simulate-hardware, to run without GPIO; "
                + "in a container, pass the /dev/gpiochip* devices through"
        }
        let simulation = configuration.mode == .auto ? "" : ", or hardware.mode = \"simulated\" to run without GPIO"
        return "\(error.message); this machine has \(chips.joined(separator: ", ")): set hardware.chip to one of them (by name, path or label)\(simulation)"
    }

    /// What `alarmd check-config` says of the parts: the chip and each line as the kernel names it,
    /// or why the simulation stands in. `refused` when alarmd could not start with them (a chip or
    /// line not there, two parts on one line, a line another program holds). Lines are only looked up.
    public static func check(_ configuration: NodeConfiguration.Hardware, deviceDirectory: String = "/dev",
                             logger: Logger) -> (report: String, refused: Bool) {
        let chips = GPIOChip.deviceNames(in: deviceDirectory)
        if configuration.mode == .simulated {
            return ("simulated" + (chips.isEmpty ? "" : ", on a machine with GPIO chips: no buzzer will sound"), false)
        }
        // No chip at all: most likely not the board (a chroot building its image, a PC), so not a refusal.
        if chips.isEmpty {
            return (configuration.mode == .auto ? "simulated: this machine has no GPIO chip"
                    : "not checked: this machine has no GPIO chip, and alarmd in gpio mode starts only on one that has it", false)
        }
        do throws(GPIOError) {
            let chip = try GPIOChip(GPIOChipSelector(configuration.chip), logger: logger)
            var lines: [String] = [], partsByOffset: [UInt32: String] = [:]
            for (key, line) in configuration.parts {
                let settings = lineConfiguration(line)
                let info = try chip.lineInfo(settings.line)
                if let other = partsByOffset[info.offset] {
                    return ("hardware.\(key) and hardware.\(other) are both \(info.description): give each part a line of its own", true)
                }
                // A running alarmd holds its own lines: only another program's hold stops a start.
                if let holder = info.consumer, !holder.hasPrefix("alarmd-") {
                    return ("hardware.\(key): '\(holder)' holds \(info.description): free it, or choose another line "
                            + "(gpioinfo \(chip.name) shows every line's holder)", true)
                }
                partsByOffset[info.offset] = key
                lines.append("\(key) line \(info.offset)\(info.name.map { " '\($0)'" } ?? "") (\(settings.settingsDescription))")
            }
            return ("\(chip.name) [\(chip.label)]: \(lines.joined(separator: "; "))", false)
        } catch where error.code == .permissionDenied {
            return ("not checked: \(error.message); or run check-config as the user alarmd runs as (sudo -u alarmd alarmd check-config FILE)", false)
        } catch where error.code == .chipNotFound {
            return (chipNotFoundMessage(error, chips: chips, configuration), true)
        } catch { return (error.message, true) }
    }

    private static func lineConfiguration(_ line: NodeConfiguration.Hardware.Line) -> GPIOLineConfiguration {
        GPIOLineConfiguration(GPIOLineSelector(line.line), activeLow: line.activeLow, bias: GPIOBias(rawValue: line.bias) ?? .asIs)
    }

    private static func openGPIO(_ configuration: NodeConfiguration.Hardware, logger: Logger) throws(GPIOError) -> NodeHardware.Parts {
        let chip = try GPIOChip(GPIOChipSelector(configuration.chip), logger: logger)
        // The configuration reader guarantees a buzzer and a stop button.
        let buzzer = try chip.requestOutput(lineConfiguration(configuration.buzzer!), consumer: "alarmd-buzzer")
        let led = try configuration.led.map { line throws(GPIOError) in
            try chip.requestOutput(lineConfiguration(line), consumer: "alarmd-led")
        }
        let stop = try chip.requestInput(lineConfiguration(configuration.stopButton!), consumer: "alarmd-stop")
        let snooze = try configuration.snoozeButton.map { line throws(GPIOError) in
            try chip.requestInput(lineConfiguration(line), consumer: "alarmd-snooze")
        }
        let lines = [buzzer, led].compactMap(\.?.description) + [stop, snooze].compactMap(\.?.description)
        logger.notice("GPIO opened",
                      metadata: ["chip": "\(chip.name)", "label": "\(chip.label)", "lines": "\(lines.joined(separator: ", "))"])
        for (key, input) in [("stop-button", stop), ("snooze-button", snooze)] {
            guard let input, (try? input.isActive()) == true else { continue }
            logger.warning("button reads pressed at start", metadata: [
                "button": "\(key)", "line": "\(input.description)",
                "advice": "unless it is held, its active-low or bias is wrong for its wiring (a button to ground needs active-low = true and bias = \"pull-up\")",
            ])
        }
        return NodeHardware.Parts(buzzer: buzzer, led: led, buttons: GPIOButtons(stop: stop, snooze: snooze, logger: logger),
                                  layout: snooze == nil ? .singleButton : .twoButtons)
    }
}
