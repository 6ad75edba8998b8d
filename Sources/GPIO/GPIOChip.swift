import CGPIOD
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// An open GPIO chip. Lines requested from it keep it open; it closes
/// (`gpiod_chip_close`) when the chip and all its lines are gone.
///
/// libgpiod's objects are not thread-safe: every call on this chip or its
/// lines goes through one mutex.
public final class GPIOChip: Sendable {
    /// The kernel's name for the chip, e.g. `gpiochip0` (`gpiod_chip_name`).
    public let name: String
    /// The chip's label, e.g. `pinctrl-rp1` (`gpiod_chip_label`).
    public let label: String
    /// How many lines the chip has (`gpiod_chip_num_lines`).
    public let lineCount: Int

    private let handle: Mutex<OpaquePointer>
    let logger: Logger

    /// Opens a chip: `gpiod_chip_open_by_name` for a name, `gpiod_chip_open` for a path,
    /// `gpiod_chip_open_by_label` (which opens every chip to read its label) for a label.
    public init(_ selector: GPIOChipSelector, logger: Logger) throws(GPIOError) {
        let opened: OpaquePointer? = switch selector {
        case .name(let name): gpiod_chip_open_by_name(name)
        case .path(let path): gpiod_chip_open(path)
        case .label(let label): gpiod_chip_open_by_label(label)
        }
        guard let pointer = opened else { throw GPIOError.from(errno: errno, during: .openChip(selector)) }
        name = String(cString: gpiod_chip_name(pointer))
        label = String(cString: gpiod_chip_label(pointer))
        lineCount = Int(gpiod_chip_num_lines(pointer))
        handle = Mutex(pointer)
        var logger = logger
        logger[metadataKey: "gpio.chip"] = "\(name)"
        self.logger = logger
        logger.debug("GPIO chip opened", metadata: ["gpio.label": "\(label)", "gpio.lines": "\(lineCount)"])
    }

    deinit { handle.withLock { gpiod_chip_close($0) } }

    /// The GPIO character devices in `directory` (`gpiochipN`), sorted: the chips libgpiod's
    /// `gpiod_chip_iter_new` would open, found without opening them (so without needing
    /// permission). Empty on a machine with no GPIO at all, such as a PC or a container.
    public static func deviceNames(in directory: String = "/dev") -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { GPIOChipSelector($0) == .name($0) }.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
    }

    /// Requests a line as an output, initially off (inactive), with
    /// `gpiod_line_request_output_flags`.
    public func requestOutput(_ configuration: GPIOLineConfiguration, consumer: String) throws(GPIOError) -> GPIOOutput {
        let (line, description) = try request(configuration, consumer: consumer) { line, flags in
            gpiod_line_request_output_flags(line, consumer, flags, 0)
        }
        logger.debug("GPIO output requested", metadata: ["gpio.line": "\(description)"])
        return GPIOOutput(RequestedLine(chip: self, handle: line, named: description, offBeforeRelease: true))
    }

    /// Requests a line as an input reporting both edges, with
    /// `gpiod_line_request_both_edges_events_flags`; the event file descriptor
    /// (`gpiod_line_event_get_fd`) is made non-blocking.
    public func requestInput(_ configuration: GPIOLineConfiguration, consumer: String) throws(GPIOError) -> GPIOInput {
        let (line, description) = try request(configuration, consumer: consumer) { line, flags in
            gpiod_line_request_both_edges_events_flags(line, consumer, flags)
        }
        let fd = withLock { _ in gpiod_line_event_get_fd(line.pointer) }
        guard fd >= 0, case let flags = fcntl(fd, F_GETFL), flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let code = errno
            withLock { _ in gpiod_line_release(line.pointer) }
            throw GPIOError.from(errno: code, during: .readEvents(description))
        }
        logger.debug("GPIO input requested", metadata: ["gpio.line": "\(description)"])
        return GPIOInput(RequestedLine(chip: self, handle: line, named: description, offBeforeRelease: false), eventFD: fd)
    }

    /// Runs `body` with the chip pointer, holding the chip's mutex.
    func withLock<Result: Sendable, Failure: Error>(_ body: (OpaquePointer) throws(Failure) -> Result) throws(Failure) -> Result {
        try handle.withLock { (pointer) throws(Failure) -> Result in try body(pointer) }
    }

    /// Looks a line up without requesting it, as `check-config` does: its offset and kernel name,
    /// and who holds it, if anyone (`gpiod_line_update`, `gpiod_line_consumer`).
    public func lineInfo(_ selector: GPIOLineSelector) throws(GPIOError) -> GPIOLineInfo {
        try withLock { (chip) throws(GPIOError) -> GPIOLineInfo in
            let (line, description) = try find(selector, on: chip)
            return GPIOLineInfo(offset: description.offset, name: description.name, description: description.description,
                                consumer: consumer(of: line))
        }
    }

    /// Finds the line (`gpiod_chip_get_line` for an offset, `gpiod_chip_find_line` for a name);
    /// called holding the chip's mutex.
    private func find(_ selector: GPIOLineSelector, on chip: OpaquePointer) throws(GPIOError) -> (OpaquePointer, LineDescription) {
        let (found, lookup): (OpaquePointer?, GPIOOperation) = switch selector {
        case .offset(let offset): (gpiod_chip_get_line(chip, offset), .getLine(chip: name, offset: offset, lineCount: lineCount))
        case .name(let lineName): (gpiod_chip_find_line(chip, lineName), .findLine(chip: name, name: lineName))
        }
        guard let line = found else { throw GPIOError.from(errno: errno, during: lookup) }
        return (line, LineDescription(chip: name, offset: gpiod_line_offset(line), name: gpiod_line_name(line).map { String(cString: $0) }))
    }

    /// Who holds the line as the kernel says now (`unnamed` for a holder without a name), or nil
    /// when no one does.
    private func consumer(of line: OpaquePointer) -> String? {
        guard gpiod_line_update(line) == 0, gpiod_line_is_used(line) else { return nil }
        return gpiod_line_consumer(line).map { String(cString: $0) } ?? "unnamed"
    }

    /// Finds the line and requests it with `request`; on `EBUSY` it says who holds it.
    private func request(
        _ configuration: GPIOLineConfiguration, consumer: String,
        _ request: (OpaquePointer, Int32) -> Int32
    ) throws(GPIOError) -> (LineHandle, LineDescription) {
        try withLock { (chip) throws(GPIOError) -> (LineHandle, LineDescription) in
            let (line, description) = try find(configuration.line, on: chip)
            guard request(line, Self.flags(for: configuration)) == 0 else {
                let code = errno
                throw GPIOError.from(
                    errno: code,
                    during: .request(description, settings: configuration.settingsDescription,
                                     consumer: code == EBUSY ? self.consumer(of: line) : nil))
            }
            return (LineHandle(pointer: line), description)
        }
    }

    private static func flags(for configuration: GPIOLineConfiguration) -> Int32 {
        let bias = switch configuration.bias {
        case .asIs: 0
        case .disabled: GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE
        case .pullUp: GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP
        case .pullDown: GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN
        }
        return Int32((configuration.activeLow ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0) | bias)
    }
}

/// A libgpiod line pointer.
///
/// `@unchecked Sendable`: the line object belongs to its chip and is only passed to libgpiod inside
/// `GPIOChip.withLock`, which serializes every call on that chip; the chip outlives it because
/// the `RequestedLine` of a `GPIOOutput`/`GPIOInput` holds the chip.
struct LineHandle: @unchecked Sendable { let pointer: OpaquePointer }

/// A line as found on its chip, not requested.
public struct GPIOLineInfo: Sendable, Hashable {
    /// The line's offset on its chip.
    public var offset: UInt32
    /// The line's name as the device tree sets it, e.g. `GPIO17`.
    public var name: String?
    /// The line as messages name it: `line 17 'GPIO17' on gpiochip0`.
    public var description: String
    /// Who holds the line now (a process's consumer name, a driver), or nil when it is free.
    public var consumer: String?
}
