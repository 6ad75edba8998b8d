import CLinux
import Foundation
import Glibc

/// A kernel object behind a descriptor that becomes readable when there is news: a timerfd
/// for wall-clock jumps, an inotify instance for time-zone changes.
protocol ReadinessSource: Sendable {
    associatedtype Event: Sendable

    /// The watch thread's name (prctl keeps at most 15 bytes).
    static var threadName: String { get }
    /// What the thread waits for, for error messages ("waiting for wall-clock jumps").
    static var waitingAction: String { get }

    var descriptor: OwnedDescriptor { get }

    /// Called on the watch thread each time poll(2) reports `descriptor` readable.
    /// Returns the event to deliver, or nil when the wake-up carried none.
    mutating func readEvent() throws(SystemError) -> Event?
}

/// Iterates a ``ReadinessSource``: the source is prepared (timer armed, watch added) when the
/// iterator is made, so nothing that happens after `makeAsyncIterator()` is missed; the
/// watch thread starts with the first `next()` and stops when iteration ends.
struct ReadinessIterator<Source: ReadinessSource> {
    private enum State {
        case prepared(Source)
        case failedToPrepare(SystemError)
        case streaming(AsyncStream<Result<Source.Event, SystemError>>.Iterator)
        case finished
    }

    private var state: State

    init(preparing prepare: () throws(SystemError) -> Source) {
        do {
            state = .prepared(try prepare())
        } catch {
            state = .failedToPrepare(error)
        }
    }

    mutating func next(isolation actor: isolated (any Actor)?) async throws(SystemError) -> Source.Event? {
        var events: AsyncStream<Result<Source.Event, SystemError>>.Iterator
        switch state {
        case .prepared(let source):
            do {
                events = try WatchThread.start(watching: source)
            } catch {
                state = .finished
                throw error
            }
        case .streaming(let running):
            events = running
        case .failedToPrepare(let error):
            state = .finished
            throw error
        case .finished:
            return nil
        }
        guard let result = await events.next(isolation: actor) else {
            state = .finished
            return nil
        }
        state = .streaming(events)
        return try result.get()
    }
}

/// A dedicated thread blocked in poll(2) on a source's descriptor and on an eventfd(2) that
/// says "stop". Waiting there keeps Swift's cooperative thread pool free; the eventfd is
/// signalled when the stream terminates (the consuming task was cancelled or dropped its
/// iterator), so the thread wakes at once, returns, and the source's descriptor is closed.
enum WatchThread {
    static func start<Source: ReadinessSource>(
        watching source: Source
    ) throws(SystemError) -> AsyncStream<Result<Source.Event, SystemError>>.Iterator {
        let stopSignal = OwnedDescriptor(try systemCall("creating an eventfd to stop the \(Source.threadName) thread") {
            eventfd(0, CLINUX_EFD_CLOEXEC | CLINUX_EFD_NONBLOCK)
        })
        // Events are rare (clock steps, zone changes); a consumer that falls behind by more
        // than this many only needs the newest, as each one means "re-evaluate".
        let (stream, continuation) = AsyncStream.makeStream(
            of: Result<Source.Event, SystemError>.self,
            bufferingPolicy: .bufferingNewest(32)
        )
        continuation.onTermination = { _ in
            // The descriptor stays open while this closure exists, so the write cannot reach
            // a reused descriptor number. EAGAIN (counter full) still leaves it readable.
            _ = eventfd_write(stopSignal.raw, 1)
        }
        let thread = Thread {
            _ = Source.threadName.withCString { clinux_set_thread_name($0) }
            var source = source
            run(&source, stopSignal: stopSignal, continuation: continuation)
            continuation.finish()
        }
        thread.start()
        return stream.makeAsyncIterator()
    }

    private static func run<Source: ReadinessSource>(
        _ source: inout Source,
        stopSignal: OwnedDescriptor,
        continuation: AsyncStream<Result<Source.Event, SystemError>>.Continuation
    ) {
        let readable = Int16(POLLIN)
        var descriptors = [
            pollfd(fd: source.descriptor.raw, events: readable, revents: 0),
            pollfd(fd: stopSignal.raw, events: readable, revents: 0),
        ]
        while true {
            do throws(SystemError) {
                try systemCall(Source.waitingAction) { poll(&descriptors, 2, -1) }
                if descriptors[1].revents != 0 { return }
                let sourceEvents = descriptors[0].revents
                if sourceEvents & readable != 0 {
                    if let event = try source.readEvent() {
                        continuation.yield(.success(event))
                    }
                } else if sourceEvents != 0 {
                    // POLLERR, POLLHUP or POLLNVAL without data: the descriptor is unusable.
                    throw SystemError(code: EIO, action: Source.waitingAction, remedy: "the kernel reported the descriptor unusable: restart the daemon")
                }
            } catch {
                continuation.yield(.failure(error))
                return
            }
        }
    }
}
