import Glibc
import Logging
import Testing
@testable import GPIO

@Suite struct GPIOErrorTests {
    @Test func chipSelectorsParseConfigurationStrings() {
        #expect(GPIOChipSelector("gpiochip0") == .name("gpiochip0"))
        #expect(GPIOChipSelector("/dev/gpiochip4") == .path("/dev/gpiochip4"))
        #expect(GPIOChipSelector("pinctrl-rp1") == .label("pinctrl-rp1"))
        #expect(GPIOChipSelector("gpiochip") == .label("gpiochip"))
        #expect(GPIOChipSelector("gpiochipX") == .label("gpiochipX"))
    }

    @Test func lineSelectorsParseConfigurationStrings() {
        #expect(GPIOLineSelector("17") == .offset(17))
        #expect(GPIOLineSelector("GPIO17") == .name("GPIO17"))
        #expect(GPIOLineSelector("-1") == .name("-1"))
    }

    /// This machine has no GPIO chip: libgpiod fails with ENOENT.
    @Test func missingChipSaysWhatToRun() throws {
        let error = #expect(throws: GPIOError.self) {
            try GPIOChip(.name("gpiochip9"), logger: Logger(label: "test"))
        }
        #expect(error?.code == .chipNotFound)
        #expect(error?.message == "no GPIO chip 'gpiochip9': list chips with gpiodetect")
    }

    @Test func pathThatIsNotAChip() {
        let error = #expect(throws: GPIOError.self) {
            try GPIOChip(.path("/dev/null"), logger: Logger(label: "test"))
        }
        #expect(error?.code == .chipNotFound)
        #expect(error?.message == "'/dev/null' is not a GPIO chip: list chips with gpiodetect")
    }

    @Test func errnoFunnelMessages() {
        let line = LineDescription(chip: "gpiochip0", offset: 17, name: "GPIO17")
        let busy = GPIOError.from(errno: EBUSY, during: .request(line, settings: "pull-up", consumer: "other"))
        #expect(busy.code == .lineBusy)
        #expect(busy.message == "another process holds line 17 'GPIO17' on gpiochip0 (consumer 'other'): find it with gpioinfo")

        let denied = GPIOError.from(errno: EACCES, during: .openChip(.name("gpiochip0")))
        #expect(denied.code == .permissionDenied)
        #expect(denied.message == "permission denied opening GPIO chip 'gpiochip0': add the user to the gpio group and install deploy/99-alarmd-gpio.rules (docs/hardware.md)")

        let deniedLabel = GPIOError.from(errno: EACCES, during: .openChip(.label("pinctrl-rp1")))
        #expect(deniedLabel.message.contains("to look for label 'pinctrl-rp1'"))

        let unknownName = GPIOError.from(errno: ENOENT, during: .findLine(chip: "gpiochip0", name: "BUZZER"))
        #expect(unknownName.code == .lineNotFound)
        #expect(unknownName.message == "no line named 'BUZZER' on gpiochip0: list line names with gpioinfo gpiochip0")

        let badOffset = GPIOError.from(errno: EINVAL, during: .getLine(chip: "gpiochip0", offset: 60, lineCount: 54))
        #expect(badOffset.message == "gpiochip0 has no line 60 (it has 54 lines): list lines with gpioinfo gpiochip0")

        let unsupported = GPIOError.from(errno: EINVAL, during: .request(line, settings: "pull-up", consumer: nil))
        #expect(unsupported.code == .unsupported)

        let io = GPIOError.from(errno: EIO, during: .setValue(line))
        #expect(io.code == .io)
        #expect(io.message == "cannot set line 17 'GPIO17' on gpiochip0: Input/output error")
    }
}
