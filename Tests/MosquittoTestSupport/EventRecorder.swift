import Mosquitto
import Synchronization

/// Consumes a client's ``MQTTClient/events`` and lets a test wait, with a deadline, for the next event
/// that matches. Each wait starts after the event the previous wait returned, so a test can expect
/// `.connected`, then `.disconnected`, then `.connected` again, in that order.
public final class EventRecorder: Sendable {
    private let storage = Storage()

    public init(_ client: MQTTClient) {
        let storage = self.storage
        Task {
            for await event in client.events {
                storage.append(event)
            }
            storage.finish()
        }
    }

    /// Waits for the next event for which `match` returns a value, and returns that value.
    ///
    /// - Throws: ``TestSupportError`` when none arrives within `timeout` or the stream finishes.
    public func next<Value: Sendable>(
        _ description: String,
        within timeout: Duration = .seconds(10),
        where match: (MQTTEvent) -> Value?
    ) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        while true {
            switch storage.consumeFirst(where: match) {
            case .found(let value):
                return value
            case .finished:
                throw TestSupportError("the event stream finished while waiting for \(description); unconsumed: \(storage.unconsumedSummary())")
            case .notYet(let seenCount):
                guard ContinuousClock.now < deadline else {
                    throw TestSupportError("no \(description) within \(timeout); unconsumed: \(storage.unconsumedSummary())")
                }
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.storage.waitForEvent(beyond: seenCount) }
                    group.addTask { try? await Task.sleep(until: deadline) }
                    await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    /// Waits for `.connected`.
    @discardableResult
    public func connected(within timeout: Duration = .seconds(10)) async throws -> Bool {
        try await next("connected event", within: timeout) { event in
            if case .connected(let sessionPresent) = event { sessionPresent } else { nil }
        }
    }

    /// Waits for `.disconnected` and returns its reason.
    @discardableResult
    public func disconnected(within timeout: Duration = .seconds(10)) async throws -> String {
        try await next("disconnected event", within: timeout) { event in
            if case .disconnected(let reason) = event { reason } else { nil }
        }
    }

    /// Waits for the next message whose topic matches `filter`.
    public func message(on filter: String, within timeout: Duration = .seconds(10)) async throws -> MQTTMessage {
        try await next("message on '\(filter)'", within: timeout) { event in
            if case .message(let message) = event, MQTTClient.topic(message.topic, matches: filter) { message } else { nil }
        }
    }

    /// Collects the messages on `filter` up to and including the first one for which `isLast` is
    /// true, all within `timeout`.
    public func messages(
        on filter: String,
        within timeout: Duration = .seconds(10),
        through isLast: (MQTTMessage) -> Bool
    ) async throws -> [MQTTMessage] {
        let deadline = ContinuousClock.now + timeout
        var collected: [MQTTMessage] = []
        while true {
            let remaining = deadline - ContinuousClock.now
            let message = try await self.message(on: filter, within: max(remaining, .zero))
            collected.append(message)
            if isLast(message) {
                return collected
            }
        }
    }
}

extension EventRecorder {
    enum Lookup<Value> {
        case found(Value)
        case notYet(seenCount: Int)
        case finished
    }

    final class Storage: Sendable {
        private struct State {
            var events: [MQTTEvent] = []
            /// Index of the first event not yet returned by a wait.
            var cursor = 0
            var isFinished = false
            var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
            var nextWaiterID = 0
        }

        private let state = Mutex(State())

        func append(_ event: MQTTEvent) {
            resumeWaiters { $0.events.append(event) }
        }

        func finish() {
            resumeWaiters { $0.isFinished = true }
        }

        private func resumeWaiters(after change: (inout State) -> Void) {
            let waiters = state.withLock { state in
                change(&state)
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters {
                waiter.resume()
            }
        }

        func consumeFirst<Value>(where match: (MQTTEvent) -> Value?) -> Lookup<Value> {
            state.withLock { state in
                for index in state.cursor..<state.events.count {
                    if let value = match(state.events[index]) {
                        state.cursor = index + 1
                        return .found(value)
                    }
                }
                return state.isFinished ? .finished : .notYet(seenCount: state.events.count)
            }
        }

        func unconsumedSummary() -> String {
            state.withLock { state in
                state.events[state.cursor...].map { "\($0)" }.joined(separator: ", ")
            }
        }

        /// Returns once more than `count` events were recorded, the stream finished, or the task is cancelled.
        func waitForEvent(beyond count: Int) async {
            let waiterID = state.withLock { state in
                defer { state.nextWaiterID += 1 }
                return state.nextWaiterID
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state in
                        if state.events.count > count || state.isFinished || Task.isCancelled {
                            return true
                        }
                        state.waiters[waiterID] = continuation
                        return false
                    }
                    if ready {
                        continuation.resume()
                    }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: waiterID) }?.resume()
            }
        }
    }
}
