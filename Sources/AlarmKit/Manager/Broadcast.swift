import Synchronization

/// A value that any number of observers can follow at once: each new stream first yields the
/// current value, then every later one. A slow observer skips to the newest value. A broadcast
/// made ``init(unknown:)`` yields nothing until its first ``send(_:)``.
public final class Broadcast<Value: Sendable>: AsyncSequence, Sendable {
    private struct State {
        var value: Value
        var known = true
        var nextID = 0
        var observers: [Int: AsyncStream<Value>.Continuation] = [:]
        var finished = false
    }

    private let state: Mutex<State>
    /// Held while a value is delivered, so every observer sees the values in the senders'
    /// order. Delivering (`yield`) may wait for the observing task's status lock in the Swift
    /// runtime, and cancelling that task holds its status lock while the stream's termination
    /// handler unregisters the observer under `state`: so nothing yields while holding
    /// `state`, and the termination handler never takes this lock.
    private let delivery = Mutex(())

    public init(_ value: Value) { state = Mutex(State(value: value)) }

    /// A broadcast whose value is not known yet: ``value`` is `placeholder` until the first send,
    /// and streams begin with that send (a remote node's alarms before its retained state is in).
    public init(unknown placeholder: Value) { state = Mutex(State(value: placeholder, known: false)) }

    public var value: Value { state.withLock { $0.value } }

    /// False until the first ``send(_:)`` of a broadcast made ``init(unknown:)``.
    public var isKnown: Bool { state.withLock { $0.known } }

    /// Sets the value and delivers it to every observer.
    public func send(_ value: Value) {
        delivery.withLock { _ in
            let observers = state.withLock { state in
                state.value = value
                state.known = true
                return Array(state.observers.values)
            }
            for observer in observers { observer.yield(value) }
        }
    }

    /// Sends `value` unless it is known already: a remote node's replay or fetch that finds the
    /// same alarms is no update.
    func sendIfChanged(_ value: Value) where Value: Equatable { if !isKnown || self.value != value { send(value) } }

    /// A stream of the current value and every later one; it ends when `finish()` is called, or
    /// right after the current value when it was called already.
    public func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1))
        let registered = delivery.withLock { _ in
            let (id, current) = state.withLock { state -> (Int?, Value?) in
                guard !state.finished else { return (nil, state.known ? state.value : nil) }
                let id = state.nextID
                state.nextID += 1
                state.observers[id] = continuation
                return (id, state.known ? state.value : nil)
            }
            if let current { continuation.yield(current) }
            return id
        }
        guard let id = registered else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.observers.removeValue(forKey: id) } }
        return stream
    }

    /// Iterating a broadcast directly iterates a new ``stream()``.
    public func makeAsyncIterator() -> AsyncStream<Value>.Iterator { stream().makeAsyncIterator() }

    /// How many streams are registered (for tests).
    var observerCount: Int { state.withLock { $0.observers.count } }

    /// Ends every observer's stream.
    public func finish() {
        let observers = state.withLock { state in
            state.finished = true
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }
}
