import Synchronization

/// An in-process output line: the buzzer or LED of the simulation mode and of
/// unit tests. Its state can be read, and observed as a stream of changes.
public final class SimulatedLine: OutputLine {
    /// A level the line took, and when (read as it was set, so an observer that runs later
    /// still learns the exact instant).
    public struct Change: Sendable, Equatable {
        public var isOn: Bool
        public var at: ContinuousClock.Instant
    }

    private struct State {
        var isOn = false
        var changedAt = ContinuousClock.now
        var nextObserver = 0
        var observers: [Int: AsyncStream<Change>.Continuation] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The current logical state.
    public var isOn: Bool {
        state.withLock { $0.isOn }
    }

    public func set(_ on: Bool) {
        let changedAt = ContinuousClock.now
        let observers = state.withLock { state -> [AsyncStream<Change>.Continuation] in
            guard state.isOn != on else { return [] }
            state.isOn = on
            state.changedAt = changedAt
            return Array(state.observers.values)
        }
        for observer in observers {
            observer.yield(Change(isOn: on, at: changedAt))
        }
    }

    /// The current state, then every change, until the consumer stops iterating.
    public func changes() -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self)
        let id = state.withLock { state -> Int in
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            continuation.yield(Change(isOn: state.isOn, at: state.changedAt))
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
        var nextObserver = 0
        var observers: [Int: AsyncStream<(edge: ButtonEdge, at: C.Instant)>.Continuation] = [:]
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
        let at = origin.advanced(by: .nanoseconds(Int64(clamping: edge.timestamp)))
        let (consumer, observers) = state.withLock { state -> (CheckedContinuation<ButtonEdge?, Never>?, [AsyncStream<(edge: ButtonEdge, at: C.Instant)>.Continuation]) in
            guard !state.finished else { return (nil, []) }
            let observers = Array(state.observers.values)
            guard let consumer = state.consumer else {
                state.queue.append(edge)
                return (nil, observers)
            }
            state.consumer = nil
            return (consumer, observers)
        }
        consumer?.resume(returning: edge)
        for observer in observers { observer.yield((edge, at)) }
    }

    /// Every edge injected from now on, with the instant on the clock its timestamp stands
    /// for: to show the virtual buttons. Any number of observers, unlike the edge sequence
    /// itself, which has one consumer (the press detector). Ends with ``finish()``.
    public func injectedEdges() -> AsyncStream<(edge: ButtonEdge, at: C.Instant)> {
        let (stream, continuation) = AsyncStream.makeStream(of: (edge: ButtonEdge, at: C.Instant).self)
        let id = state.withLock { state -> Int in
            defer { state.nextObserver += 1 }
            state.observers[state.nextObserver] = continuation
            return state.nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends the edge stream.
    public func finish() {
        let (consumer, waiters, observers) = state.withLock { state in
            state.finished = true
            defer { state.consumer = nil; state.idleWaiters = []; state.observers = [:] }
            return (state.consumer, state.idleWaiters, Array(state.observers.values))
        }
        consumer?.resume(returning: nil)
        for waiter in waiters { waiter.resume() }
        for observer in observers { observer.finish() }
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
