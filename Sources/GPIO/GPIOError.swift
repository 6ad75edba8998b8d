import Glibc

/// A GPIO failure, with a message that names the chip and line and says what to check.
public struct GPIOError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// No such chip (or the path is not a GPIO chip).
        case chipNotFound
        /// The process may not open the chip.
        case permissionDenied
        /// Another process (or another request in this one) holds the line.
        case lineBusy
        /// No line with that name or offset on the chip.
        case lineNotFound
        /// The kernel or chip refused the requested settings.
        case unsupported
        /// The line was released and can no longer be used.
        case released
        /// Any other I/O failure.
        case io
    }

    public let code: Code
    public let message: String

    public var description: String { message }
}

/// A line as named in messages: `line 17 'GPIO17' on gpiochip0`.
struct LineDescription: Sendable, Hashable, CustomStringConvertible {
    var chip: String
    var offset: UInt32
    var name: String?

    var description: String { "line \(offset)\(name.map { " '\($0)'" } ?? "") on \(chip)" }
}

/// What was being done when a libgpiod call failed.
enum GPIOOperation: Sendable {
    case openChip(GPIOChipSelector)
    case getLine(chip: String, offset: UInt32, lineCount: Int)
    case findLine(chip: String, name: String)
    /// `consumer` is who holds the line, when the kernel says.
    case request(LineDescription, settings: String, consumer: String?)
    case setValue(LineDescription)
    case readValue(LineDescription)
    case readEvents(LineDescription)
    case waitForEvents
    case startEventThread
}

extension GPIOError {
    static let permissionAdvice = "add the user to the gpio group and install deploy/99-alarmd-gpio.rules (docs/hardware.md)"

    /// The one place an `errno` from libgpiod or the kernel becomes a ``GPIOError``.
    static func from(errno code: Int32, during operation: GPIOOperation) -> GPIOError {
        let reason = String(cString: strerror(code))
        func error(_ kind: Code, _ message: String) -> GPIOError { GPIOError(code: kind, message: message) }
        if code == EACCES || code == EPERM {
            let subject: String? = switch operation {
            case .openChip(.label(let label)): "opening the GPIO chips to look for label '\(label)'"
            case .openChip(let selector): "opening GPIO chip \(selector)"
            case .request(let line, _, _), .setValue(let line), .readValue(let line), .readEvents(let line): "on \(line)"
            case .getLine(let chip, _, _), .findLine(let chip, _): "on GPIO chip \(chip)"
            case .waitForEvents, .startEventThread: nil
            }
            if let subject { return error(.permissionDenied, "permission denied \(subject): \(permissionAdvice)") }
        }
        switch operation {
        case .openChip(let selector):
            switch code {
            case ENOENT: return error(.chipNotFound, "no GPIO chip \(selector): list chips with gpiodetect")
            case ENODEV, ENOTTY: return error(.chipNotFound, "'\(selector.text)' is not a GPIO chip: list chips with gpiodetect")
            default: return error(.io, "cannot open GPIO chip \(selector): \(reason)")
            }
        case .getLine(let chip, let offset, let lineCount):
            if code == EINVAL || code == ENOENT {
                return error(.lineNotFound,
                             "\(chip) has no line \(offset) (it has \(lineCount) lines): list lines with gpioinfo \(chip)")
            }
            return error(.io, "cannot read line \(offset) on \(chip): \(reason)")
        case .findLine(let chip, let name):
            if code == ENOENT {
                return error(.lineNotFound, "no line named '\(name)' on \(chip): list line names with gpioinfo \(chip)")
            }
            return error(.io, "cannot look up line '\(name)' on \(chip): \(reason)")
        case .request(let line, let settings, let consumer):
            switch code {
            case EBUSY:
                let holder = consumer.map { " (consumer '\($0)')" } ?? ""
                return error(.lineBusy, "another process holds \(line)\(holder): find it with gpioinfo")
            case EINVAL, EOPNOTSUPP:
                return error(.unsupported,
                             "the kernel refused \(line) with \(settings): bias needs Linux 5.5 or later and a chip that supports it; check the line's configuration")
            default: return error(.io, "cannot request \(line): \(reason)")
            }
        case .setValue(let line): return error(.io, "cannot set \(line): \(reason)")
        case .readValue(let line): return error(.io, "cannot read \(line): \(reason)")
        case .readEvents(let line): return error(.io, "cannot read edge events of \(line): \(reason)")
        case .waitForEvents: return error(.io, "waiting for GPIO edge events failed: \(reason)")
        case .startEventThread: return error(.io, "cannot start the GPIO event thread: \(reason)")
        }
    }

    static func released(_ line: LineDescription) -> GPIOError {
        GPIOError(code: .released, message: "\(line) was already released")
    }
}
