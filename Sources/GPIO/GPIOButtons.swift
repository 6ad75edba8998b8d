import AlarmHardware
import Glibc
import LinuxSystem
import Logging

/// A GPIO output drives the buzzer or the LED.
extension GPIOOutput: OutputLine {}

/// The stop and (optional) snooze buttons on GPIO inputs, as raw ``ButtonEdge``s with the
/// kernel's timestamps. Request the inputs active-low when pressing pulls the line to ground,
/// so that `pressed` is `true` while held.
///
/// Each iteration starts one ``PollThread`` (named `alarmd-gpio`) that blocks in `poll()` on the
/// lines' event file descriptors; it never polls on a timer and never blocks Swift's
/// cooperative pool. Edges are read with ``GPIOInput/readEvents()`` and delivered in the order
/// read. Cancelling the iterating task (or dropping the iterator) stops the thread at once. A
/// failure ends the sequence with a ``GPIOError``.
///
/// Use one iteration at a time: two would compete for the same events.
public struct GPIOButtons: ButtonEdgeSource {
    private let lines: [(button: Button, input: GPIOInput)]
    private let logger: Logger

    public init(stop: GPIOInput, snooze: GPIOInput?, logger: Logger) {
        self.lines = [(.stop, stop)] + (snooze.map { [(.snooze, $0)] } ?? [])
        self.logger = logger
    }

    /// Starts the poll thread for this iteration.
    public func makeAsyncIterator() -> AsyncThrowingStream<ButtonEdge, any Error>.Iterator {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ButtonEdge.self, bufferingPolicy: .bufferingNewest(1024))
        let lines = lines, logger = logger
        do throws(SystemError) {
            let thread = try PollThread.start(
                name: "alarmd-gpio", waitingAction: "waiting for GPIO edge events",
                descriptors: lines.map(\.input.eventFileDescriptor), state: ()
            ) { _, index, readiness in
                Self.deliverEdges(of: lines[index], readiness: readiness, to: continuation, logger: logger)
            } finished: { error in
                continuation.finish(throwing: error.map { GPIOError.from(errno: $0.code, during: .waitForEvents) })
                logger.debug("GPIO event thread stopped")
            }
            continuation.onTermination = { _ in thread.stop() }
            logger.debug("GPIO event thread started", metadata: ["gpio.lines": "\(lines.map(\.input.description))"])
        } catch { continuation.finish(throwing: GPIOError.from(errno: error.code, during: .startEventThread)) }
        return stream.makeAsyncIterator()
    }

    /// On the poll thread: reads the line's pending edges into the stream. Returns false, having
    /// ended the stream, when the line failed or the consumer is gone.
    private static func deliverEdges(
        of line: (button: Button, input: GPIOInput), readiness: PollThread.Readiness,
        to continuation: AsyncThrowingStream<ButtonEdge, any Error>.Continuation, logger: Logger
    ) -> Bool {
        guard readiness == .readable else {
            continuation.finish(throwing: GPIOError(
                code: .io, message: "the event file of \(line.input.description) failed; was the line released?"))
            return false
        }
        do {
            var events = try line.input.readEvents()
            // A full queue may have dropped the last edges (a bouncy button, a starved thread): when the
            // level differs from the last edge read, the lost edge is put back: a release right after it
            // (a press never lasts longer than it did), a press as of now (a tap is never taken for long).
            if events.count == GPIOInput.kernelQueueLength, let last = events.last, let active = try? line.input.isActive(), active != last.rising {
                events.append(GPIOEdgeEvent(rising: active, timestamp: active ? UInt64(ClockReading.nanoseconds(CLOCK_MONOTONIC)) : last.timestamp + 1))
                logger.notice("GPIO edge put back: the kernel's queue of edges was full", metadata: ["gpio.line": "\(line.input.description)"])
            }
            for event in events {
                switch continuation.yield(ButtonEdge(button: line.button, pressed: event.rising, timestamp: event.timestamp)) {
                case .enqueued: break
                case .dropped:
                    logger.warning("GPIO edge events dropped: consumer too slow", metadata: ["gpio.line": "\(line.input.description)"])
                case .terminated: return false
                @unknown default: return false
                }
            }
            return true
        } catch {
            continuation.finish(throwing: error)
            return false
        }
    }
}
