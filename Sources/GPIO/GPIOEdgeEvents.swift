import LinuxSystem
import Logging

/// Edge events from a set of input lines, as an async sequence.
///
/// Each iteration starts one ``PollThread`` (named `alarmd-gpio`) that blocks in `poll()` on the
/// lines' event file descriptors; it never polls on a timer and never blocks Swift's
/// cooperative pool. Events are read with ``GPIOInput/readEvents()`` and delivered in the order
/// read. Cancelling the iterating task (or dropping the iterator) stops the thread at once. A
/// failure ends the sequence with a ``GPIOError``.
///
/// Use one iteration at a time: two would compete for the same events.
public struct GPIOEdgeEvents: AsyncSequence, Sendable {
    public typealias Element = GPIOEdgeEvent
    public typealias Failure = any Error

    private let inputs: [GPIOInput]
    private let logger: Logger

    public init(inputs: [GPIOInput], logger: Logger) {
        self.inputs = inputs
        self.logger = logger
    }

    /// Starts the poll thread for this iteration.
    public func makeAsyncIterator() -> AsyncThrowingStream<GPIOEdgeEvent, any Error>.Iterator {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: GPIOEdgeEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let inputs = inputs, logger = logger
        do throws(SystemError) {
            let thread = try PollThread.start(
                name: "alarmd-gpio", waitingAction: "waiting for GPIO edge events",
                descriptors: inputs.map(\.eventFileDescriptor), state: ()
            ) { _, index, readiness in
                Self.deliverEvents(of: inputs[index], readiness: readiness, to: continuation, logger: logger)
            } finished: { error in
                if let error {
                    continuation.finish(throwing: GPIOError.from(errno: error.code, during: .waitForEvents))
                } else {
                    continuation.finish()
                }
                logger.debug("GPIO event thread stopped")
            }
            continuation.onTermination = { _ in thread.stop() }
            logger.debug("GPIO event thread started", metadata: ["gpio.lines": "\(inputs.map(\.description))"])
        } catch {
            continuation.finish(throwing: GPIOError.from(errno: error.code, during: .startEventThread))
        }
        return stream.makeAsyncIterator()
    }

    /// On the poll thread: reads `input`'s pending edges into the stream. Returns false, having
    /// ended the stream, when the line failed or the consumer is gone.
    private static func deliverEvents(
        of input: GPIOInput, readiness: PollThread.Readiness,
        to continuation: AsyncThrowingStream<GPIOEdgeEvent, any Error>.Continuation, logger: Logger
    ) -> Bool {
        guard readiness == .readable else {
            continuation.finish(throwing: GPIOError(
                code: .io, message: "the event file of \(input.description) failed; was the line released?"))
            return false
        }
        do {
            for event in try input.readEvents() {
                switch continuation.yield(event) {
                case .enqueued: break
                case .dropped:
                    logger.warning("GPIO edge events dropped: consumer too slow", metadata: [
                        "gpio.line": "\(input.description)",
                    ])
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
