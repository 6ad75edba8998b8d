import CGPIOD
import Glibc
import Synchronization

/// A requested output line. It starts off (inactive); ``release()`` (or
/// dropping the last reference) drives it off and gives it back.
public final class GPIOOutput: Sendable, CustomStringConvertible {
    private let line: RequestedLine
    public var chip: GPIOChip { line.chip }

    init(_ line: consuming RequestedLine) { self.line = line }

    /// The line as messages name it: `line 17 'GPIO17' on gpiochip0`.
    public var description: String { line.named.description }

    /// Sets the logical value (`gpiod_line_set_value`); active-low is applied by the kernel.
    public func set(_ on: Bool) throws(GPIOError) {
        try line.requested.withLock { (requested) throws(GPIOError) in
            guard requested else { throw GPIOError.released(line.named) }
            try chip.withLock { (_) throws(GPIOError) in
                guard gpiod_line_set_value(line.handle.pointer, on ? 1 : 0) == 0 else {
                    throw GPIOError.from(errno: errno, during: .setValue(line.named))
                }
            }
        }
    }

    /// Drives the line off (`gpiod_line_set_value`), then releases it
    /// (`gpiod_line_release`). Later calls do nothing.
    public func release() { line.release() }
}

/// A requested input line reporting both edges.
public final class GPIOInput: Sendable, CustomStringConvertible {
    /// The non-blocking event file descriptor (`gpiod_line_event_get_fd`),
    /// valid until ``release()``. Readable when edges are pending.
    public let eventFileDescriptor: Int32
    private let line: RequestedLine
    public var chip: GPIOChip { line.chip }

    init(_ line: consuming RequestedLine, eventFD: Int32) {
        self.line = line
        self.eventFileDescriptor = eventFD
    }

    /// The line as messages name it: `line 17 'GPIO17' on gpiochip0`.
    public var description: String { line.named.description }

    /// Whether the line is active now (`gpiod_line_get_value`; active-low applied by the kernel):
    /// a button that reads pressed while no one touches it is wired or configured the wrong way.
    public func isActive() throws(GPIOError) -> Bool {
        let (value, code) = chip.withLock { _ in (gpiod_line_get_value(line.handle.pointer), errno) }
        guard value >= 0 else { throw GPIOError.from(errno: code, during: .readValue(line.named)) }
        return value == 1
    }

    /// The edges the kernel keeps per line (the v1 ABI's queue): it drops later ones while it is full.
    public static let kernelQueueLength = 16

    /// Reads the pending edges without blocking (`gpiod_line_event_read_fd_multiple`); empty when
    /// none are pending. Timestamps are the kernel's, in `CLOCK_MONOTONIC` nanoseconds.
    public func readEvents() throws(GPIOError) -> [GPIOEdgeEvent] {
        try line.requested.withLock { (requested) throws(GPIOError) -> [GPIOEdgeEvent] in
            guard requested else { throw GPIOError.released(line.named) }
            var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: Self.kernelQueueLength)
            let count = gpiod_line_event_read_fd_multiple(eventFileDescriptor, &buffer, UInt32(buffer.count))
            if count < 0 {
                let code = errno
                if code == EAGAIN || code == EINTR { return [] }
                throw GPIOError.from(errno: code, during: .readEvents(line.named))
            }
            return buffer.prefix(Int(count)).map { event in
                GPIOEdgeEvent(
                    rising: event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE),
                    timestamp: UInt64(event.ts.tv_sec) &* 1_000_000_000 &+ UInt64(event.ts.tv_nsec))
            }
        }
    }

    /// Releases the line (`gpiod_line_release`), closing its event file descriptor. Stop any
    /// ``GPIOButtons`` iteration over it first. Later calls do nothing.
    public func release() { line.release() }
}

/// What ``GPIOOutput`` and ``GPIOInput`` share: the chip, the libgpiod line, its name in messages
/// and whether it is still requested. It is released once, when asked or when it goes; the lock
/// order is the requested flag, then the chip's lock.
struct RequestedLine: ~Copyable, Sendable {
    let chip: GPIOChip
    let handle: LineHandle
    let named: LineDescription
    /// An output is driven off before release.
    let offBeforeRelease: Bool
    let requested = Mutex(true)

    deinit { release() }

    /// Drives an output off (`gpiod_line_set_value`), then releases the line (`gpiod_line_release`).
    /// Later calls do nothing.
    func release() {
        requested.withLock { requested in
            guard requested else { return }
            requested = false
            chip.withLock { _ in
                if offBeforeRelease, gpiod_line_set_value(handle.pointer, 0) != 0 {
                    chip.logger.warning("cannot switch GPIO output off before release", metadata: [
                        "gpio.line": "\(named.offset)", "error": "\(String(cString: strerror(errno)))",
                    ])
                }
                gpiod_line_release(handle.pointer)
            }
        }
    }
}

/// One edge on an input line.
public struct GPIOEdgeEvent: Sendable {
    /// A rising edge of the logical value (active-low applied by the kernel):
    /// the line became active.
    public let rising: Bool
    /// The kernel's timestamp, `CLOCK_MONOTONIC` nanoseconds (Linux 5.7+).
    public let timestamp: UInt64
}
