import Logging
import Synchronization

/// Runs a ``ButtonDebouncer`` on a live edge stream and publishes presses.
///
/// Debouncing and press lengths use the edges' own timestamps. The clock is only used to wake up
/// when a deadline passes without an edge (the line went quiet, or a button is still held at the
/// long-press threshold): the deadline is placed on the clock relative to when the latest edge was
/// received. There is no periodic polling: between edges and deadlines the detector sleeps.
public final class ButtonPressDetector<C: Clock>: Sendable where C.Duration == Duration {
    /// Classified presses, already mapped through the button layout. Finishes
    /// when ``run(edges:)`` returns. One consumer.
    public let presses: AsyncStream<ButtonPress>
    private let continuation: AsyncStream<ButtonPress>.Continuation
    private let timing: ButtonTiming
    private let layout: ButtonLayout
    private let clock: C
    private let logger: Logger

    public init(timing: ButtonTiming = ButtonTiming(), layout: ButtonLayout = .twoButtons, clock: C, logger: Logger) {
        (presses, continuation) = AsyncStream.makeStream(of: ButtonPress.self)
        self.timing = timing
        self.layout = layout
        self.clock = clock
        self.logger = logger
    }

    /// Edges handed from the consuming child task to the classifying loop.
    private final class Inbox: Sendable {
        struct State {
            var edges: [(edge: ButtonEdge, receivedAt: C.Instant)] = []
            var finished = false
        }

        let state = Mutex(State())
    }

    /// Consumes `edges` until the sequence ends, fails (rethrown) or the task is
    /// cancelled; then finishes ``presses``.
    public func run(edges: some ButtonEdgeSource) async throws {
        defer { continuation.finish() }
        let inbox = Inbox()
        let wake = WakeSignal()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in
                defer {
                    inbox.state.withLock { $0.finished = true }
                    wake.signal()
                }
                for try await edge in edges {
                    let receivedAt = clock.now
                    inbox.state.withLock { $0.edges.append((edge, receivedAt)) }
                    wake.signal()
                }
            }

            var debouncer = ButtonDebouncer(timing: timing)
            var anchor: (timestamp: UInt64, receivedAt: C.Instant)?
            while !Task.isCancelled {
                let (batch, finished) = inbox.state.withLock { inbox in
                    defer { inbox.edges.removeAll(keepingCapacity: true) }
                    return (inbox.edges, inbox.finished)
                }
                for (edge, receivedAt) in batch {
                    logger.trace("button edge", metadata: [
                        "button": "\(edge.button)", "pressed": "\(edge.pressed)", "timestamp": "\(edge.timestamp)",
                    ])
                    publish(debouncer.receive(edge))
                    anchor = (edge.timestamp, receivedAt)
                }
                if finished { break }
                guard let anchor, let deadline = debouncer.nextDeadline else {
                    await wake.wait()
                    continue
                }
                let now = anchor.timestamp &+ ButtonDebouncer.nanoseconds(anchor.receivedAt.duration(to: clock.now))
                if now >= deadline {
                    publish(debouncer.advance(to: now))
                } else {
                    let wakeAt = anchor.receivedAt.advanced(by: .nanoseconds(Int64(deadline &- anchor.timestamp)))
                    await wake.wait(until: wakeAt, on: clock)
                }
            }
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    private func publish(_ presses: [ButtonPress]) {
        for press in presses {
            let mapped = layout.map(press)
            logger.debug("button press", metadata: [
                "button": "\(mapped.button)", "press": "\(mapped.kind)", "at": "\(mapped.at)",
            ])
            continuation.yield(mapped)
        }
    }
}
