// gpio-probe: exercises the GPIO and AlarmHardware modules on a real kernel
// GPIO chip (gpio-sim under QEMU, see Tests/HIL). It prints `PROBE ...` lines
// that the guest test script checks against the simulated chip's sysfs.
//
//   gpio-probe run --chip C --buzzer LINE --led LINE --stop LINE --snooze LINE
//       Requests the lines (LINE is `name-or-offset[,active-low][,pull-up|,pull-down|,bias-disabled]`),
//       switches the buzzer on, then reacts to debounced presses:
//       stop short -> buzzer off; snooze short -> LED on; stop long -> buzzer on;
//       snooze long -> exit (releasing every line).
//   gpio-probe request --chip C --line LINE
//       Requests one output and holds it until stdin closes; prints the GPIOError on failure (exit 2).

import AlarmHardware
import GPIO
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func say(_ text: String) {
    print("PROBE \(text)")
    fflush(nil)
}

func lineConfiguration(_ spec: String) -> GPIOLineConfiguration {
    let parts = spec.split(separator: ",").map(String.init)
    var configuration = GPIOLineConfiguration(GPIOLineSelector(parts.first ?? spec))
    for option in parts.dropFirst() {
        switch option {
        case "active-low": configuration.activeLow = true
        case "pull-up": configuration.bias = .pullUp
        case "pull-down": configuration.bias = .pullDown
        case "bias-disabled": configuration.bias = .disabled
        default: say("warning unknown-option=\(option)")
        }
    }
    return configuration
}

func options(_ arguments: ArraySlice<String>) -> [String: String] {
    var result: [String: String] = [:]
    var iterator = arguments.makeIterator()
    while let key = iterator.next(), let value = iterator.next() {
        result[String(key.drop(while: { $0 == "-" }))] = value
    }
    return result
}

func runButtons(_ options: [String: String], logger: Logger) async throws {
    let chip = try GPIOChip(GPIOChipSelector(options["chip"] ?? "gpiochip0"), logger: logger)
    say("chip name=\(chip.name) label=\(chip.label) lines=\(chip.lineCount)")
    let buzzer = try chip.requestOutput(lineConfiguration(options["buzzer"] ?? "buzzer"), consumer: "gpio-probe")
    let led = try chip.requestOutput(lineConfiguration(options["led"] ?? "led"), consumer: "gpio-probe")
    let stop = try chip.requestInput(lineConfiguration(options["stop"] ?? "stop,active-low,pull-up"), consumer: "gpio-probe")
    let snooze = try chip.requestInput(
        lineConfiguration(options["snooze"] ?? "snooze,active-low,pull-up"), consumer: "gpio-probe")
    let timing = ButtonTiming(debounce: .milliseconds(Int(options["debounce-ms"] ?? "") ?? 30))
    let detector = ButtonPressDetector(timing: timing, clock: ContinuousClock(), logger: logger)
    let buttons = GPIOButtons(stop: stop, snooze: snooze, logger: logger)

    try buzzer.set(true)
    say("ready buzzer=on led=off")
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await detector.run(edges: buttons) }
        for await press in detector.presses {
            say("press button=\(press.button) kind=\(press.kind) at=\(press.at)")
            switch (press.button, press.kind) {
            case (.stop, .short):
                try buzzer.set(false)
                say("buzzer=off")
            case (.snooze, .short):
                try led.set(true)
                say("led=on")
            case (.stop, .long):
                try buzzer.set(true)
                say("buzzer=on")
            case (.snooze, .long):
                group.cancelAll()
            }
        }
        try await group.waitForAll()
    }
    for line in [buzzer, led] { line.release() }
    for line in [stop, snooze] { line.release() }
    say("done")
}

func holdLine(_ options: [String: String], logger: Logger) throws {
    let chip = try GPIOChip(GPIOChipSelector(options["chip"] ?? "gpiochip0"), logger: logger)
    let line = try chip.requestOutput(lineConfiguration(options["line"] ?? "0"), consumer: "gpio-probe-hold")
    say("holding line=\(line)")
    while readLine() != nil {}
    line.release()
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = Logger.Level(rawValue: getenv("LOG_LEVEL").map { String(cString: $0) } ?? "") ?? .info
    return handler
}
let logger = Logger(label: "gpio-probe")
let arguments = CommandLine.arguments
do {
    switch arguments.dropFirst().first {
    case "run":
        try await runButtons(options(arguments.dropFirst(2)), logger: logger)
    case "request":
        try holdLine(options(arguments.dropFirst(2)), logger: logger)
    default:
        say("usage: gpio-probe run|request --chip C ...")
        exit(64)
    }
} catch let error as GPIOError {
    say("error code=\(error.code) message=\(error.message)")
    exit(2)
} catch {
    say("error \(error)")
    exit(1)
}
