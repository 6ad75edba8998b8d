import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Edge events from a set of input lines, as an async sequence.
///
/// Each iteration starts one dedicated thread that blocks in `poll()` on the
/// lines' event file descriptors and on a wake-up pipe; it never polls on a
/// timer and never blocks Swift's cooperative pool. Events are read with
/// ``GPIOInput/readEvents()`` and delivered in the order read. Cancelling the
/// iterating task (or dropping the iterator) writes to the pipe, and the
/// thread ends at once. A failure ends the sequence with a ``GPIOError``.
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
        EdgePoller.start(inputs: inputs, continuation: continuation, logger: logger)
        return stream.makeAsyncIterator()
    }
}

/// The state one poll thread shares with whoever stops it.
private final class EdgePoller: Sendable {
    private struct WakePipe {
        var readFD: Int32
        var writeFD: Int32
    }

    private let inputs: [GPIOInput]
    private let continuation: AsyncThrowingStream<GPIOEdgeEvent, any Error>.Continuation
    private let logger: Logger
    /// `nil` once the thread has closed it.
    private let wakePipe: Mutex<WakePipe?>

    private init(inputs: [GPIOInput], continuation: AsyncThrowingStream<GPIOEdgeEvent, any Error>.Continuation,
                 logger: Logger, pipe: WakePipe) {
        self.inputs = inputs
        self.continuation = continuation
        self.logger = logger
        self.wakePipe = Mutex(pipe)
    }

    static func start(inputs: [GPIOInput], continuation: AsyncThrowingStream<GPIOEdgeEvent, any Error>.Continuation,
                      logger: Logger) {
        // Glibc's Swift module has no pipe2(): set the flags with fcntl().
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            continuation.finish(throwing: GPIOError.from(errno: errno, during: .startEventThread))
            return
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        let poller = EdgePoller(inputs: inputs, continuation: continuation, logger: logger,
                                pipe: WakePipe(readFD: fds[0], writeFD: fds[1]))
        continuation.onTermination = { _ in poller.stop() }

        var thread = pthread_t()
        let context = Unmanaged.passRetained(poller).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<EdgePoller>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<EdgePoller>.fromOpaque(context).release()
            poller.closePipe()
            continuation.finish(throwing: GPIOError.from(errno: created, during: .startEventThread))
            return
        }
        pthread_detach(thread)
    }

    /// Wakes the thread so that it ends. Safe to call at any time, repeatedly.
    func stop() {
        wakePipe.withLock { pipe in
            guard let pipe else { return }
            var byte: UInt8 = 1
            _ = write(pipe.writeFD, &byte, 1)
        }
    }

    private func closePipe() {
        wakePipe.withLock { pipe in
            guard let open = pipe else { return }
            close(open.readFD)
            close(open.writeFD)
            pipe = nil
        }
    }

    /// The thread's body: poll, read, deliver; until stopped or failed.
    private func run() {
        defer { closePipe() }
        guard let wakeFD = wakePipe.withLock({ $0?.readFD }) else { return }
        var fds = inputs.map { pollfd(fd: $0.eventFileDescriptor, events: Int16(POLLIN), revents: 0) }
        fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
        logger.debug("GPIO event thread started", metadata: ["gpio.lines": "\(inputs.map(\.description))"])
        while true {
            for index in fds.indices { fds[index].revents = 0 }
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                let code = errno
                if code == EINTR { continue }
                continuation.finish(throwing: GPIOError.from(errno: code, during: .waitForEvents))
                return
            }
            if fds[inputs.count].revents != 0 {
                logger.debug("GPIO event thread stopped")
                continuation.finish()
                return
            }
            for (index, input) in inputs.enumerated() where fds[index].revents != 0 {
                do {
                    for event in try input.readEvents() {
                        switch continuation.yield(event) {
                        case .enqueued: break
                        case .dropped:
                            logger.warning("GPIO edge events dropped: consumer too slow", metadata: [
                                "gpio.line": "\(input.description)",
                            ])
                        case .terminated: return
                        @unknown default: return
                        }
                    }
                } catch {
                    continuation.finish(throwing: error)
                    return
                }
                if fds[index].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    continuation.finish(throwing: GPIOError(
                        code: .io, message: "the event file of \(input.description) failed; was the line released?"))
                    return
                }
            }
        }
    }
}
