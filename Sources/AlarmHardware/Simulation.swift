import Synchronization

/// An in-process output line: the buzzer or LED of the simulation mode and of
/// unit tests. Its state can be read, and observed as a stream of changes.
public final class SimulatedLine: OutputLine {
    public let name: String

    private struct State {
        var isOn = false
        var nextObserver = 0
        var observers: [Int: AsyncStream<Bool>.Continuation] = [:]
    }

    private let state = Mutex(State())

    public init(name: String) {
        self.name = name
    }

    /// The current logical state.
    public var isOn: Bool {
        state.withLock { $0.isOn }
    }

    public func set(_ on: Bool) {
        let observers = state.withLock { state -> [AsyncStream<Bool>.Continuation] in
            guard state.isOn != on else { return [] }
            state.isOn = on
            return Array(state.observers.values)
        }
        for observer in observers {
            observer.yield(on)
        }
    }

    /// The current state, then every change, until the consumer stops iterating.
    public func changes() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
        let id = state.withLock { state -> Int in
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            continuation.yield(state.isOn)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// In-process buttons: presses injected by tests or by the daemon's simulation
/// mode come out as the same ``ButtonEdge`` stream real lines produce, with
/// timestamps taken from the injected clock (nanoseconds since this object was
/// made). One consumer iterates it; iteration ends on ``finish()`` or when the
/// consuming task is cancelled.
public final class SimulatedButtons<C: Clock>: ButtonEdgeSource where C.Duration == Duration {
    public typealias Element = ButtonEdge
    public typealias Failure = Never

    private struct State {
        var queue: [ButtonEdge] = []
        var finished = false
        var consumer: CheckedContinuation<ButtonEdge?, Never>?
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let clock: C
    private let origin: C.Instant
    private let state = Mutex(State())

    public init(clock: C) {
        self.clock = clock
        self.origin = clock.now
    }

    /// The clock's current time as an edge timestamp.
    public var now: UInt64 {
        ButtonDebouncer.nanoseconds(origin.duration(to: clock.now))
    }

    /// Presses `button` now and releases it after `duration` on the clock.
    /// If the task is cancelled while the button is held, the release is still
    /// delivered, at the moment of cancellation, and the error is rethrown.
    public func press(_ button: Button, duration: Duration) async throws {
        inject(ButtonEdge(button: button, pressed: true, timestamp: now))
        defer { inject(ButtonEdge(button: button, pressed: false, timestamp: now)) }
        try await clock.sleep(for: duration)
    }

    /// Delivers one raw edge as is: for bounce sequences and exact timestamps.
    public func inject(_ edge: ButtonEdge) {
        let consumer = state.withLock { state -> CheckedContinuation<ButtonEdge?, Never>? in
            guard !state.finished else { return nil }
            guard let consumer = state.consumer else {
                state.queue.append(edge)
                return nil
            }
            state.consumer = nil
            return consumer
        }
        consumer?.resume(returning: edge)
    }

    /// Ends the edge stream.
    public func finish() {
        let (consumer, waiters) = state.withLock { state in
            state.finished = true
            defer { state.consumer = nil; state.idleWaiters = [] }
            return (state.consumer, state.idleWaiters)
        }
        consumer?.resume(returning: nil)
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the consumer has taken every injected edge and asks for
    /// the next one (or the stream has ended): everything injected so far has
    /// been handed over.
    public func waitUntilConsumed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.finished || (state.queue.isEmpty && state.consumer != nil) { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let buttons: SimulatedButtons

        public mutating func next() async -> ButtonEdge? {
            await buttons.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(buttons: self)
    }

    private func next() async -> ButtonEdge? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ButtonEdge?, Never>) in
                let (result, waiters) = state.withLock { state -> (ButtonEdge??, [CheckedContinuation<Void, Never>]) in
                    if !state.queue.isEmpty { return (.some(state.queue.removeFirst()), []) }
                    if state.finished || Task.isCancelled { return (.some(nil), []) }
                    state.consumer = continuation
                    defer { state.idleWaiters = [] }
                    return (nil, state.idleWaiters)
                }
                for waiter in waiters { waiter.resume() }
                if let result { continuation.resume(returning: result) }
            }
        } onCancel: {
            finish()
        }
    }
}
