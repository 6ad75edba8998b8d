import AlarmHardware
@testable import AlarmNode
import Foundation
import Logging
import Testing

/// When `auto` mode may stand the simulation in for GPIO, and which buttons the simulation has.
/// The machine's chips are read from a folder of the test's own, standing in for `/dev`.
@Suite("Hardware parts")
struct HardwarePartsTests {
    /// A label no chip has, so that opening it fails on any machine, with or without GPIO.
    static func configuration(mode: NodeConfiguration.Hardware.Mode, snoozeButton: Bool = true) -> NodeConfiguration.Hardware {
        var hardware = NodeConfiguration.Hardware()
        hardware.mode = mode
        hardware.chip = "alarmd-test-no-such-chip"
        if !snoozeButton { hardware.snoozeButton = nil }
        return hardware
    }

    /// Runs `body` with a folder holding empty files of these names.
    static func withDevices<Result>(_ names: [String], _ body: (String) throws -> Result) throws -> Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alarmd-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in names {
            try Data().write(to: folder.appendingPathComponent(name))
        }
        return try body(folder.path)
    }

    static let logger = Logger(label: "test.hardware-parts")

    @Test("Auto mode simulates on a machine with no GPIO chip at all")
    func autoWithoutChipsSimulates() throws {
        let made = try Self.withDevices(["null", "ttyS0", "gpiochipX"]) { dev in
            try HardwareParts.make(Self.configuration(mode: .auto), deviceDirectory: dev, logger: Self.logger)
        }
        #expect(made.simulation != nil)
        #expect(made.parts.layout == .twoButtons)
    }

    @Test("Auto mode refuses a chip name that matches none of the machine's chips, and lists them")
    func autoWithOtherChipsRefuses() throws {
        let error = try Self.withDevices(["gpiochip10", "gpiochip0", "gpiochip4", "null"]) { dev in
            #expect(throws: StartupError.self) {
                try HardwareParts.make(Self.configuration(mode: .auto), deviceDirectory: dev, logger: Self.logger)
            }
        }
        let message = try #require(error).message
        #expect(message.contains("'alarmd-test-no-such-chip'"))
        #expect(message.contains("this machine has gpiochip0, gpiochip4, gpiochip10: set hardware.chip"))
        #expect(!message.contains("simulated"), "auto mode is already the fallback; the fix is the chip name")
    }

    @Test("GPIO mode refuses a missing chip and says how to run without GPIO")
    func gpioModeRefuses() throws {
        let error = try Self.withDevices([]) { dev in
            #expect(throws: StartupError.self) {
                try HardwareParts.make(Self.configuration(mode: .gpio), deviceDirectory: dev, logger: Self.logger)
            }
        }
        let message = try #require(error).message
        #expect(message.hasPrefix("no GPIO chip labelled 'alarmd-test-no-such-chip': this machine has no GPIO chip (no /dev/gpiochip*)"))
        #expect(message.contains("set hardware.mode = \"simulated\" (or \"auto\"), or start alarmd with --simulate-hardware"))
        #expect(!message.contains("gpiodetect"), "there is no chip to list")
    }

    @Test("check-config's report: the simulation and why, a machine without chips not checked, a chip not there refused")
    func check() throws {
        let none = try Self.withDevices([]) { dev in
            (auto: HardwareParts.check(Self.configuration(mode: .auto), deviceDirectory: dev, logger: Self.logger),
             gpio: HardwareParts.check(Self.configuration(mode: .gpio), deviceDirectory: dev, logger: Self.logger))
        }
        #expect(none.auto == ("simulated: this machine has no GPIO chip", false))
        #expect(!none.gpio.refused && none.gpio.report.hasPrefix("not checked: this machine has no GPIO chip"),
                "a chroot building a board's image checks the file, not the chip")
        let some = try Self.withDevices(["gpiochip0"]) { dev in
            (simulated: HardwareParts.check(Self.configuration(mode: .simulated), deviceDirectory: dev, logger: Self.logger),
             auto: HardwareParts.check(Self.configuration(mode: .auto), deviceDirectory: dev, logger: Self.logger))
        }
        #expect(some.simulated == ("simulated, on a machine with GPIO chips: no buzzer will sound", false))
        #expect(some.auto.refused && some.auto.report.contains("this machine has gpiochip0: set hardware.chip"))
    }

    @Test("The simulation has one button when no snooze button is configured")
    func simulationFollowsTheButtons() throws {
        let single = try HardwareParts.make(Self.configuration(mode: .simulated, snoozeButton: false), logger: Self.logger)
        #expect(single.parts.layout == .singleButton)
        let two = try HardwareParts.make(Self.configuration(mode: .simulated), logger: Self.logger)
        #expect(two.parts.layout == .twoButtons)
    }
}
