import Glibc

/// A dedicated, named thread blocked in poll(2) on some descriptors and on an eventfd(2) that
/// says "stop": how the daemon waits for kernel news (GPIO edges, clock jumps, time-zone
/// changes) without holding a thread of Swift's cooperative pool or ever polling on a timer.
///
/// The handler runs on the thread for every descriptor poll reports, with the thread's own
/// state; it returns false to end the thread. ``stop()`` ends it from anywhere, at once.
public final class PollThread: Sendable {
    /// What poll(2) reported for one descriptor.
    public enum Readiness: Sendable {
        /// There is something to read (POLLIN).
        case readable
        /// POLLERR, POLLHUP or POLLNVAL without data: the descriptor is unusable.
        case failed
    }

    private let stopSignal: EventSignal

    private init(stopSignal: EventSignal) { self.stopSignal = stopSignal }

    /// Starts a thread named `name` (prctl keeps 15 bytes) that polls `descriptors`.
    ///
    /// - Parameters:
    ///   - waitingAction: what the thread waits for, for the error if poll(2) fails.
    ///   - state: the thread's own state, handed to `handle` as `inout`.
    ///   - handle: called on the thread with the state, the index of a ready descriptor and
    ///     its readiness; returns false to end the thread.
    ///   - finished: called once on the thread as it ends: with nil when `handle` or ``stop()``
    ///     ended it, with the error when poll(2) failed.
    /// - Throws: when the stop eventfd (`eventfd`) or the thread (`pthread_create`) cannot be created.
    public static func start<State: Sendable>(
        name: String, waitingAction: String, descriptors: [Int32], state: State,
        handle: @escaping @Sendable (inout State, Int, Readiness) -> Bool,
        finished: @escaping @Sendable (SystemError?) -> Void
    ) throws(SystemError) -> PollThread {
        let pollThread = PollThread(stopSignal: try EventSignal(waking: "the \(name) thread"))
        try startDedicatedThread(named: name) {
            var state = state
            finished(pollThread.run(descriptors, waitingAction: waitingAction, state: &state, handle: handle))
        }
        return pollThread
    }

    /// Wakes the thread so that it ends. Safe from any thread, at any time, repeatedly.
    public func stop() { stopSignal.signal() }

    /// The thread's body: poll, hand over, until stopped, ended by the handler, or failed.
    private func run<State>(
        _ watched: [Int32], waitingAction: String, state: inout State,
        handle: (inout State, Int, Readiness) -> Bool
    ) -> SystemError? {
        let readable = Int16(POLLIN)
        var descriptors = watched.map { pollfd(fd: $0, events: readable, revents: 0) }
        descriptors.append(pollfd(fd: stopSignal.descriptor, events: readable, revents: 0))
        while true {
            for index in descriptors.indices { descriptors[index].revents = 0 }
            do {
                try systemCall(waitingAction) { poll(&descriptors, nfds_t(descriptors.count), -1) }
            } catch { return error }
            if descriptors[watched.count].revents != 0 { return nil }
            for index in watched.indices where descriptors[index].revents != 0 {
                let readiness: Readiness = descriptors[index].revents & readable != 0 ? .readable : .failed
                guard handle(&state, index, readiness) else { return nil }
            }
        }
    }
}
