import Synchronization

/// An in-process output line: the buzzer or LED of the simulation mode and of
/// unit tests. Its state can be read, and its changes observed as they happen.
public final class SimulatedLine: OutputLine {
    /// A level the line took, and when.
    public struct Change: Sendable, Equatable {
        public var isOn: Bool
        public var at: ContinuousClock.Instant
    }

    private struct State {
        var isOn = false
        var observers: [@Sendable (Change) -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// The current logical state.
    public var isOn: Bool { state.withLock { $0.isOn } }

    /// Sets the level and, when it changed, tells the observers on this thread: an observer
    /// that woke a task instead would take a core from the caller just as an alarm sounds.
    public func set(_ on: Bool) {
        let changedAt = ContinuousClock.now
        let observers = state.withLock { state -> [@Sendable (Change) -> Void] in
            guard state.isOn != on else { return [] }
            state.isOn = on
            return state.observers
        }
        for observer in observers { observer(Change(isOn: on, at: changedAt)) }
    }

    /// Calls `observer` with every change from now on, on the thread that sets the line (in the
    /// node, with the hardware driver's lock held) and outside the line's lock. It must not block.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }
}

/// In-process buttons: presses injected by tests or by the daemon's simulation mode come out as the
/// same ``ButtonEdge`` stream real lines produce, with timestamps taken from the injected clock
/// (nanoseconds since this object was made). One consumer iterates it; iteration ends on
/// ``finish()`` or when the consuming task is cancelled.
public final class SimulatedButtons<C: Clock>: ButtonEdgeSource where C.Duration == Duration {
    private struct State {
        var queue: [ButtonEdge] = []
        var finished = false
        var consumer: CheckedContinuation<ButtonEdge?, Never>?
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var observers: [@Sendable (ButtonEdge, C.Instant) -> Void] = []
    }

    private let clock: C
    private let origin: C.Instant
    private let state = Mutex(State())

    public init(clock: C) {
        self.clock = clock
        self.origin = clock.now
    }

    /// The clock's current time as an edge timestamp.
    public var now: UInt64 { ButtonDebouncer.nanoseconds(origin.duration(to: clock.now)) }

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
        let (consumer, observers) = state.withLock { state -> (CheckedContinuation<ButtonEdge?, Never>?, [@Sendable (ButtonEdge, C.Instant) -> Void]) in
            guard !state.finished else { return (nil, []) }
            if state.consumer == nil { state.queue.append(edge) }
            return (state.consumer.take(), state.observers)
        }
        consumer?.resume(returning: edge)
        for observer in observers { observer(edge, at) }
    }

    /// Calls `observer` with every edge injected from now on, and the instant on the clock its
    /// timestamp stands for, on the thread that injects it: to show the virtual buttons. Any
    /// number of observers, unlike the edge sequence itself, which has one consumer (the press
    /// detector). It must not block.
    public func observeInjectedEdges(_ observer: @escaping @Sendable (ButtonEdge, C.Instant) -> Void) {
        state.withLock { $0.observers.append(observer) }
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

    /// Returns once the consumer has taken every injected edge and asks for the next one (or the
    /// stream has ended): everything injected so far has been handed over.
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

        public mutating func next() async -> ButtonEdge? { await buttons.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buttons: self) }

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
        } onCancel: { finish() }
    }
}
