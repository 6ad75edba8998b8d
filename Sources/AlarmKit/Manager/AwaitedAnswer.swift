import Synchronization

/// One answer awaited once, with a time limit: a reply to a request, a press during a prompt.
///
/// The answer may come before the wait starts (it is kept), during it (the waiter resumes), or
/// not at all (the wait ends at its limit). Once the wait is over, by an answer, the limit or
/// cancellation, later answers are refused, so whoever gives one learns that nobody took it.
public final class AwaitedAnswer<Value: Sendable>: Sendable {
    private enum State {
        case open
        case answered(Value)
        case waiting(CheckedContinuation<Value?, Never>)
        case over
    }

    private let state = Mutex(State.open)

    public init() {}

    /// Gives the answer. Returns false, and changes nothing, when the wait is over or an answer
    /// was given already.
    @discardableResult
    public func answer(_ value: Value) -> Bool {
        let (accepted, waiter): (Bool, CheckedContinuation<Value?, Never>?) = state.withLock { state in
            switch state {
            case .open:
                state = .answered(value)
                return (true, nil)
            case .waiting(let waiter):
                state = .over
                return (true, waiter)
            case .answered, .over:
                return (false, nil)
            }
        }
        waiter?.resume(returning: value)
        return accepted
    }

    /// Waits for the answer for at most `limit`, measured by `sleep` (the caller's clock); nil
    /// when the limit passes first or the task is cancelled. Call it once: the wait is over when
    /// it returns.
    public func wait(atMost limit: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) async -> Value? {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // Cancelled once the answer is in; otherwise the limit ends the wait, and so does
                // a sleep that fails (a wait must not outlive its limit because a clock failed).
                try? await sleep(limit)
                self.end()
            }
            let answer = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                    let ready: Value?? = state.withLock { state in
                        switch state {
                        case .open:
                            state = .waiting(continuation)
                            return nil
                        case .answered(let value):
                            state = .over
                            return .some(value)
                        case .waiting, .over:
                            return .some(nil)
                        }
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: { end() }
            end()
            group.cancelAll()
            return answer
        }
    }

    /// Ends the wait: a waiter resumes with nil, and later answers are refused. An answer
    /// already accepted stays, for the waiter to take: whoever gave it was told it was taken.
    func end() {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            if case .answered = state { return nil }
            defer { state = .over }
            if case .waiting(let waiter) = state { return waiter }
            return nil
        }
        waiter?.resume(returning: nil)
    }
}
