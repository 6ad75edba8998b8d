import Synchronization

/// Group commit's bookkeeping, shared by a node's actor and its state-writer thread.
///
/// Changes are numbered as the actor applies them; one write at a time covers every change
/// numbered before it started, so many changes share one fsync. The writer thread records each
/// write's outcome here and resumes the replies waiting for it directly: a reply waits for the
/// disk, never for the actor.
final class GroupCommit: Sendable {
    /// What to do once a change has had its write: resume a task, or send a reply.
    typealias Waiter = (version: Int, settle: @Sendable (AlarmManager.AlarmError?) -> Void)

    private struct State {
        /// The number of the latest change.
        var applied = 0
        /// Every change up to this number is on disk.
        var saved = 0
        /// Every change up to this number has had its write attempted.
        var settled = 0
        /// Why the latest attempt failed, for changes in (saved, settled].
        var lastFailure: AlarmManager.AlarmError?
        var isWriting = false
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Numbers a new change that must reach the disk.
    func numberChange() -> Int {
        state.withLock { state in
            state.applied += 1
            return state.applied
        }
    }

    /// The latest change's number while some change is not on disk yet, else nil.
    var unsavedVersion: Int? {
        state.withLock { $0.applied > $0.saved ? $0.applied : nil }
    }

    /// Starts a write when none runs and some change is not on disk: returns the number the
    /// write covers (the latest change's), or nil.
    func beginWrite() -> Int? {
        state.withLock { state in
            guard !state.isWriting, state.applied > state.saved else { return nil }
            state.isWriting = true
            return state.applied
        }
    }

    /// Records the outcome of the write that covered changes up to `version` and resumes the
    /// replies it settles (on the calling thread). Returns whether another write should start
    /// now: after a success, when changes came meanwhile; after a failure, only when replies
    /// still wait (otherwise the next change retries, so a broken disk is not written in a loop).
    func finishWrite(version: Int, failure: AlarmManager.AlarmError?) -> Bool {
        let (settled, writeAgain): ([Waiter], Bool) = state.withLock { state in
            state.isWriting = false
            state.settled = max(state.settled, version)
            if let failure {
                state.lastFailure = failure
            } else {
                state.saved = max(state.saved, version)
            }
            let settled = state.waiters.filter { $0.version <= version }
            state.waiters.removeAll { $0.version <= version }
            let writeAgain = failure == nil ? state.applied > state.saved : !state.waiters.isEmpty
            return (settled, writeAgain)
        }
        for waiter in settled { waiter.settle(failure) }
        return writeAgain
    }

    /// How many replies wait (for tests).
    var waiterCount: Int {
        state.withLock { $0.waiters.count }
    }

    /// Waits until change `version` has had its write; returns the failure when that write
    /// failed and no later one has saved it.
    func outcome(of version: Int) async -> AlarmManager.AlarmError? {
        await withCheckedContinuation { continuation in
            whenSettled(version) { continuation.resume(returning: $0) }
        }
    }

    /// Calls `settle` once change `version` has had its write, with the failure when that write
    /// failed and no later one has saved it: at once on this thread when that is already
    /// known, else on the writer's thread right after the write.
    func whenSettled(_ version: Int, _ settle: @escaping @Sendable (AlarmManager.AlarmError?) -> Void) {
        let known: AlarmManager.AlarmError?? = state.withLock { state in
            if version <= state.saved { return .some(nil) }
            if version <= state.settled { return .some(state.lastFailure) }
            state.waiters.append((version, settle))
            return nil
        }
        if let known { settle(known) }
    }
}
