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

/// The iterator of ``WallClockJumps`` and ``TimeZoneWatcher``: the kernel object behind it is
/// prepared (timer armed, watch added) and its watch thread started when the iterator is made,
/// so nothing that happens after `makeAsyncIterator()` is missed; the thread stops when
/// iteration ends or the iterator is dropped.
public struct KernelEventIterator<Element: Sendable>: AsyncIteratorProtocol {
    private var events: AsyncStream<Result<Element, SystemError>>.Iterator?
    /// Why the watch could not start, thrown by the first `next()`.
    private var failure: SystemError?

    /// Prepares the source and watches it on its own ``PollThread``: when the stream terminates
    /// (the consuming task was cancelled or dropped this iterator) the thread is stopped at once,
    /// returns, and the source's descriptor is closed.
    init<Source: ReadinessSource>(preparing prepare: () throws(SystemError) -> Source) where Source.Event == Element {
        // Events are rare (clock steps, zone changes); a consumer that falls behind by more
        // than this many only needs the newest, as each one means "re-evaluate".
        let (stream, continuation) = AsyncStream.makeStream(of: Result<Element, SystemError>.self, bufferingPolicy: .bufferingNewest(32))
        do {
            let source = try prepare()
            let thread = try PollThread.start(
                name: Source.threadName, waitingAction: Source.waitingAction, descriptors: [source.descriptor.raw], state: source
            ) { source, _, readiness in
                do throws(SystemError) {
                    guard readiness == .readable else {
                        throw SystemError(code: EIO, action: Source.waitingAction, remedy: "the kernel reported the descriptor unusable: restart the daemon")
                    }
                    if let event = try source.readEvent() { continuation.yield(.success(event)) }
                    return true
                } catch {
                    continuation.yield(.failure(error))
                    return false
                }
            } finished: { error in
                if let error { continuation.yield(.failure(error)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in thread.stop() }
            events = stream.makeAsyncIterator()
        } catch { failure = error }
    }

    public mutating func next() async throws(SystemError) -> Element? { try await next(isolation: nil) }

    public mutating func next(isolation actor: isolated (any Actor)?) async throws(SystemError) -> Element? {
        if let failure = failure.take() { throw failure }
        guard let result = await events?.next(isolation: actor) else {
            events = nil
            return nil
        }
        return try result.get()
    }
}
