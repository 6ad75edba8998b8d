import Synchronization

/// Wakes one waiting loop: a level-triggered flag plus at most one waiter.
/// A signal sent while nobody waits is kept for the next ``wait()``.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state in
            if state.waiter == nil { state.pending = true }
            return state.waiter.take()
        }
        waiter?.resume()
    }

    /// Returns on a signal (consuming it) or when the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: { state.withLock { $0.waiter.take() }?.resume() }
    }

    /// Returns on a signal, at `deadline` on `clock`, or on cancellation,
    /// whichever comes first. With no deadline it waits for a signal only.
    func wait<C: Clock>(until deadline: C.Instant?, on clock: C) async {
        await withTaskGroup(of: Void.self) { group in
            if let deadline { group.addTask { try? await clock.sleep(until: deadline, tolerance: nil) } }
            group.addTask { await self.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
