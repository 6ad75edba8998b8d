import Dispatch
import FoundationEssentials
import Logging
import Synchronization

/// What a node starts from and keeps durable: the authorization decision and every alarm.
public struct NodeState: Sendable, Hashable {
    public var authorization: AlarmManager.AuthorizationState
    public var alarms: [AlarmRecord]
    /// The alarms stored or removed since the state before this one was handed to the writer
    /// (``AlarmEngine/changedAlarms``), so that a write need look at no other; nil when any may
    /// differ from what is on disk (a state built whole, such as one being moved to a new layout).
    public var changedAlarms: Set<UUID>?
    /// The zone relative schedules were planned in; nil when not known (a state saved without it).
    public var timeZone: TimeZone?

    public init(authorization: AlarmManager.AuthorizationState = .notDetermined, alarms: [AlarmRecord] = [],
                changedAlarms: Set<UUID>? = nil, timeZone: TimeZone? = nil) {
        self.authorization = authorization
        self.alarms = alarms
        self.changedAlarms = changedAlarms
        self.timeZone = timeZone
    }
}

/// Carries out what the engine decides. Implemented by the daemon (state files, MQTT, GPIO).
public protocol AlarmNodeDelegate: Sendable {
    /// Makes `state` durable: the whole state after one change, in the order of the changes.
    /// Called on the node's state-writer queue, one call at a time, before the reply to that
    /// change is given; a throw answers it with `internal`. The delegate writes what differs
    /// from what it last saved among the alarms the state names (``NodeState/changedAlarms``),
    /// and what a failed write left unsaved, which is then written with the next.
    func persist(_ state: NodeState) throws
    /// Shows a change on the outputs that must not wait for anything (the buzzer, the LED):
    /// called first, before the change's write starts and before ``perform(_:engine:authorization:)``.
    /// Called on the node's actor after every change that has effects; must not block. The
    /// default does nothing.
    func show(_ engine: AlarmEngine)
    /// Carries out effects as soon as a change is applied: publish, run intents. Called on the
    /// node's actor, after the change's write has started when a reply awaits it, before that
    /// otherwise (an alert's event goes first); must not block.
    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState)
}

extension AlarmNodeDelegate {
    public func show(_ engine: AlarmEngine) {}
}

/// Asks a person on the node whether apps may schedule alarms (the hardware prompt).
public protocol AuthorizationPrompt: Sendable {
    /// Returns `.authorized`, `.denied`, or `.notDetermined` when nobody answered.
    func requestDecision() async -> AlarmManager.AuthorizationState
}

/// An operation on an existing alarm.
public enum AlarmOperation: String, Sendable, Hashable, Codable, CaseIterable {
    case cancel, stop, countdown, pause, resume

    /// The command that carries it: each is one of the same name.
    var command: NodeCommand.Operation { NodeCommand.Operation(rawValue: rawValue)! }
}

/// An alarm node in this process: the engine, driven by a clock, with its effects carried out
/// by a delegate. Operations are durable (persisted by the delegate) before they return.
///
/// `run()` is its timer: it sleeps until the next due instant only, never polling.
public actor LocalAlarmNode {
    private var engine: AlarmEngine
    private let savedTimeZone: TimeZone?
    private var authorization: AlarmManager.AuthorizationState
    private let clock: any AlarmClock
    private let delegate: (any AlarmNodeDelegate)?
    private let prompt: (any AuthorizationPrompt)?
    private let logger: Logger
    /// The timer's wait and the deadline it waits for, nil while it is not waiting.
    private var sleeping: (task: Task<Void, Never>, until: Date)?
    private var pendingPrompt: Task<AlarmManager.AuthorizationState, Never>?
    /// The requests waiting for the pending prompt, and how many of them were cancelled.
    private nonisolated let promptWaiters = Mutex((waiting: 0, cancelled: 0))
    /// The newest write queued: a reply that changes nothing still waits for it, so that it
    /// never shows a change that is not on disk yet.
    private var latestWrite: StateWrite?

    /// Writes the state after each change, in order, off the actor (an `fsync` blocks): a
    /// libdispatch queue, whose worker thread exists only while a write runs.
    private let stateWriter = DispatchQueue(label: "alarmkit.state-writer")
    /// True while the last write failed: what it held is in effect but not on disk.
    private let lastWriteFailed = Mutex(false)
    /// An element each time a write fails (buffering one): the daemon then calls
    /// ``saveAfterFailedWrite()`` until the state is saved.
    public nonisolated let writeFailures: AsyncStream<Void>
    private let writeFailed: AsyncStream<Void>.Continuation

    /// Every alarm's document, updated after every change.
    public nonisolated let documentUpdates: Broadcast<[AlarmDocument]>
    /// The authorization decision, updated when it changes.
    public nonisolated let authorizationUpdates: Broadcast<AlarmManager.AuthorizationState>

    /// - Parameters:
    ///   - state: the state restored from disk; `advance` brings it up to date when `run()` starts.
    ///   - clockTrusted: false while the wall clock may be wrong (see `AlarmEngine.isClockTrusted`).
    ///   - authorizationPrompt: asks for a decision while it is `notDetermined`; with none, the
    ///     decision stays as `state` says.
    public init(
        configuration: EngineConfiguration = .init(),
        state: NodeState = NodeState(authorization: .authorized),
        clock: any AlarmClock = SystemAlarmClock(),
        clockTrusted: Bool = true,
        authorizationPrompt: (any AuthorizationPrompt)? = nil,
        delegate: (any AlarmNodeDelegate)? = nil,
        logger: Logger = Logger(label: "alarmkit.node")
    ) {
        let engine = AlarmEngine(configuration: configuration, records: state.alarms, clockTrusted: clockTrusted)
        self.engine = engine
        self.savedTimeZone = state.timeZone
        self.authorization = state.authorization
        self.clock = clock
        self.prompt = authorizationPrompt
        self.delegate = delegate
        self.logger = logger
        self.documentUpdates = Broadcast(engine.documents)
        self.authorizationUpdates = Broadcast(state.authorization)
        (writeFailures, writeFailed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: Reading

    public var documents: [AlarmDocument] { engine.documents }

    /// Calls `body` with the engine on the node's actor, so that no change lands between reading
    /// it and what `body` does (show it on the hardware, publish every document, say). The
    /// delegate's `show` and `perform` run on the same actor, so the two never interleave.
    /// `body` must not block.
    public func withEngine<Result: Sendable>(_ body: @Sendable (AlarmEngine) -> Result) -> Result { body(engine) }

    public var authorizationState: AlarmManager.AuthorizationState { authorization }

    // MARK: Operations

    /// Schedules or replaces an alarm; asks for authorization first while it is undetermined.
    /// Returns once the change is on disk.
    ///
    /// - Throws: `AlarmManager.AlarmError.maximumLimitReached`, or an ``AlarmNodeError``.
    public func schedule(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>) async throws -> AlarmDocument {
        switch await waitUntilDurable(await submit(.schedule(id: id, configuration: configuration, group: nil))) {
        case .alarm(let document?): return document
        case .failure(let failure): throw failure.error
        default: throw AlarmNodeError.internal("alarm \(id.uuidString) was not scheduled")
        }
    }

    /// Carries out `operation` on alarm `id`; returns once the change is on disk.
    public func perform(_ operation: AlarmOperation, id: UUID) async throws {
        if case .failure(let failure) = await waitUntilDurable(await submit(.alarm(operation, id: id))) { throw failure.error }
    }

    /// The alert's secondary button for alarm `id` (snooze, or its custom intent).
    public func secondaryAction(id: UUID) async throws(AlarmNodeError) {
        let write = try applyNow(source: .command) { engine, now throws(AlarmNodeError) in try engine.secondaryAction(id: id, now: now) }
        if let error = await write?.outcome() { throw error }
    }

    /// Applies several changes in one turn of the actor and starts writing them without waiting for
    /// the disk: for input nobody awaits a reply to, such as a hardware button, whose alarms must
    /// stop together rather than one write apart. `plan` picks the steps from the current engine at
    /// the instant of the change; `apply` carries out each one, and must change nothing when it
    /// throws (as the engine's operations do). A refused step is returned with its error; the steps
    /// before and after it stay in effect. `leadingEffects` (the event that reports the input, say)
    /// are carried out first, before the steps' own, whose lifecycle events name `source`.
    public func applyWithoutWaiting<Step: Sendable>(
        source: AlarmEvent.Source,
        reporting leadingEffects: [AlarmEffect] = [],
        planning plan: @Sendable (AlarmEngine, Date) -> [Step],
        _ apply: @Sendable (inout AlarmEngine, Step, Date) throws(AlarmNodeError) -> [AlarmEffect]
    ) -> [(Step, AlarmNodeError)] {
        catchUp()
        let now = clock.now
        var effects = leadingEffects
        var refusals: [(Step, AlarmNodeError)] = []
        for step in plan(engine, now) {
            do throws(AlarmNodeError) {
                effects += try apply(&engine, step, now).caused(by: source)
            } catch { refusals.append((step, error)) }
        }
        commit(effects, awaited: false)
        return refusals
    }

    /// A command applied to the alarms, whose reply may still wait for the disk.
    public struct Submission: Sendable {
        /// The reply once the change is durable.
        public let reply: NodeReply
        /// The change's write, nil when nothing needs writing.
        let write: StateWrite?
        /// For a command that changed nothing: the earlier write it waits for, whose failure
        /// belongs to the command that made it.
        var earlierWrite: StateWrite? = nil
    }

    /// Applies a command now, in the order commands are submitted, without waiting for the disk;
    /// `waitUntilDurable` or `whenDurable` then gives the reply. Its lifecycle events name `source`;
    /// a countdown it starts or pauses counts from `sentAt`, the requester's instant (``NodeCommand/sentAt``).
    public func submit(_ action: NodeCommand.Action, sentAt: Date? = nil, source: AlarmEvent.Source = .command) async -> Submission {
        do {
            switch action {
            case .schedule(let id, let configuration, let group):
                if authorization == .notDetermined { _ = await requestAuthorization() }
                guard authorization == .authorized else { throw AlarmNodeError.unauthorized(authorization) }
                let write = try applyNow(source: source) { engine, now throws in
                    try engine.schedule(id: id, configuration: configuration, group: group, now: now, sentAt: sentAt)
                }
                guard let document = engine.document(for: id) else {
                    // A timer whose countdown is already over alerts, or is missed, on the spot.
                    throw AlarmNodeError.internal("alarm \(id.uuidString) ended as soon as it was scheduled")
                }
                return Submission(reply: .alarm(document), write: write, earlierWrite: write == nil ? latestWrite : nil)
            case .alarm(let operation, let id):
                let write = try applyNow(source: source) { engine, now throws(AlarmNodeError) in
                    try engine.perform(operation, id: id, now: now, sentAt: sentAt)
                }
                return Submission(reply: .alarm(engine.document(for: id)), write: write,
                                  earlierWrite: write == nil ? latestWrite : nil)
            case .requestAuthorization:
                let decision = await requestAuthorization()
                // Written again, with whatever a failed write left unsaved.
                return Submission(reply: .authorization(decision), write: startWrite())
            case .list: return Submission(reply: .alarms(engine.documents), write: nil, earlierWrite: latestWrite)
            }
        } catch { return Submission(reply: .failure(NodeFailure(error)), write: nil) }
    }

    /// Waits until every change applied so far is on disk (before shutting down, say), writing
    /// again what a failed write left unsaved; returns the write's failure, if any.
    @discardableResult
    public func flush() async -> AlarmNodeError? { await startWrite()?.outcome() }

    /// The submission's reply once its change is on disk, or the write's failure. Waits for the
    /// writer only, not for the actor.
    public nonisolated func waitUntilDurable(_ submission: Submission) async -> NodeReply {
        await withCheckedContinuation { continuation in whenDurable(submission) { continuation.resume(returning: $0) } }
    }

    /// Calls `answer` with the submission's reply once its change is on disk (or with the
    /// write's failure): at once when nothing needs writing, else on the state writer's queue
    /// right after the write. `answer` must not block.
    public nonisolated func whenDurable(_ submission: Submission, answer: @escaping @Sendable (NodeReply) -> Void) {
        if let write = submission.write {
            write.whenSettled { error in answer(error.map { .failure(.node($0)) } ?? submission.reply) }
        } else if let earlierWrite = submission.earlierWrite {
            earlierWrite.whenSettled { _ in answer(submission.reply) }
        } else {
            answer(submission.reply)
        }
    }

    /// Asks for authorization when it is undetermined and a prompt exists; concurrent requests
    /// share one prompt. Returns the decision.
    public func requestAuthorization() async -> AlarmManager.AuthorizationState {
        guard authorization == .notDetermined, let prompt else { return authorization }
        let request = pendingPrompt ?? Task { await prompt.requestDecision() }
        promptWaiters.withLock { $0 = pendingPrompt == nil ? (1, 0) : ($0.waiting + 1, $0.cancelled) }
        pendingPrompt = request
        // Every requester cancelled (the node shutting down) ends the prompt rather than waiting it out.
        let decision = await withTaskCancellationHandler { await request.value } onCancel: {
            if self.promptWaiters.withLock({ $0.cancelled += 1; return $0.cancelled == $0.waiting }) { request.cancel() }
        }
        pendingPrompt = nil
        guard authorization == .notDetermined, decision != .notDetermined else { return authorization }
        authorization = decision
        _ = startWrite()
        logger.info("authorization changed", metadata: ["authorization": "\(decision.rawValue)"])
        let event = AlarmEvent(.authorization, alarmID: nil, at: clock.now,
                               details: ["authorization": .string(decision.rawValue)])
        delegate?.perform([.event(event)], engine: engine, authorization: decision)
        authorizationUpdates.send(decision)
        return decision
    }

    /// Tells the node the wall clock was stepped by `offset` seconds.
    public func wallClockStepped(by offset: TimeInterval) {
        advanceTime { engine, now in engine.wallClockStepped(by: offset, now: now) }
        // The clock's waits run on a monotonic clock: after a step the current one would end at
        // the wrong wall-clock time (too late after a forward step), even if no alarm changed.
        sleeping?.task.cancel()
    }

    /// Whether the wall clock can be trusted (see `AlarmEngine.isClockTrusted`).
    public func setClockTrusted(_ trusted: Bool) {
        guard trusted != engine.isClockTrusted else { return }
        logger.notice("wall clock trust changed", metadata: ["trusted": "\(trusted)", "held": "\(engine.heldAlarms.count)"])
        advanceTime { engine, now in engine.setClockTrusted(trusted, now: now) }
    }

    /// Changes the zone that relative schedules are read in.
    public func changeTimeZone(to timeZone: TimeZone) {
        guard timeZone != engine.configuration.timeZone else { return }
        advanceTime { engine, now in engine.changeTimeZone(to: timeZone, now: now) }
    }

    // MARK: The timer

    /// Carries out due transitions and sleeps until the next due instant, until cancelled.
    public func run() async {
        advanceTime { [savedTimeZone] engine, now in engine.replanInTimeZone(now: now, savedIn: savedTimeZone) + engine.resumeAlerts(now: now) }
        while !Task.isCancelled {
            advanceTime { engine, now in engine.advance(to: now) }
            let deadline = engine.nextDeadline ?? .distantFuture
            // The waiting task carries out what fell due itself, as soon as the clock wakes it:
            // handing back to this loop first would cost another trip through the pool before
            // an alarm sounds. The loop then re-plans.
            let sleep = Task { [clock] in
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                self.advanceTime { engine, now in engine.advance(to: now) }
            }
            sleeping = (sleep, deadline)
            await withTaskCancellationHandler { await sleep.value } onCancel: { sleep.cancel() }
            sleeping = nil
        }
    }

    // MARK: Internals

    /// Runs an operation on the engine and, when it succeeds, carries out its effects at once
    /// (the buzzer must not wait for the disk). Returns the change's write to await its
    /// durability, or nil when nothing needs writing.
    ///
    /// The engine is changed in place: an operation that throws has changed nothing (every
    /// operation checks before it changes anything; `EngineRefusalTests` holds it to that).
    private func applyNow<Failure: Error>(
        source: AlarmEvent.Source, _ change: (inout AlarmEngine, Date) throws(Failure) -> [AlarmEffect]
    ) throws(Failure) -> StateWrite? {
        catchUp()
        return commit(try change(&engine, clock.now).caused(by: source))
    }

    /// Carries out what fell due before input arrives and the timer woke for it, as the timer
    /// would: its events are the clock's, not the input's, and the input sees the alarms as they now are.
    private func catchUp() { advanceTime { engine, now in engine.advance(to: now) } }

    /// Time passing is carried out whatever the disk does: the alarm still sounds.
    private func advanceTime(_ change: (inout AlarmEngine, Date) -> [AlarmEffect]) {
        let heldBefore = engine.heldAlarms
        commit(change(&engine, clock.now), awaited: false)
        let held = engine.heldAlarms.subtracting(heldBefore)
        guard !held.isEmpty else { return }
        // Otherwise nothing says why an alarm past its time neither rings nor is missed.
        logger.notice("alerts held until the clock is synchronized (or trusted after a bound): they look later than the grace, and the clock may be what is wrong",
                      metadata: ["alarms": "\(held.map(\.uuidString).sorted())"])
    }

    /// Queues a write of the state as it is now, after the writes queued before it; nil
    /// without a delegate.
    private func startWrite() -> StateWrite? {
        // Taken even without a delegate, so that the set does not grow.
        let changedAlarms = engine.takeChangedAlarms()
        guard let delegate else { return nil }
        let state = NodeState(authorization: authorization, alarms: Array(engine.records.values), changedAlarms: changedAlarms,
                              timeZone: engine.configuration.timeZone)
        let write = StateWrite()
        latestWrite = write
        stateWriter.async { [logger] in
            do {
                try delegate.persist(state)
                self.lastWriteFailed.withLock { $0 = false }
                write.settle(nil)
            } catch {
                self.lastWriteFailed.withLock { $0 = true }
                self.writeFailed.yield()
                logger.error("state not saved", metadata: ["error": "\(error)"])
                write.settle(.internal("the node could not save its state (\(error)): the change is in effect but not on disk; it is saved as soon as a write succeeds (alarmd tries again every 5 s)"))
            }
        }
        return write
    }

    /// After the engine changed: shows it on the outputs (an alarm's buzzer waits for nothing),
    /// then carries out the effects and starts writing the change when it must reach the disk.
    /// A change whose reply is `awaited` starts its write first, so that the disk works while its
    /// effects are published; one that nobody awaits (an alarm starting to alert, a button press)
    /// is published first, so that its event does not wait for the write to take a core.
    /// Returns the change's write, or nil when nothing needs writing.
    @discardableResult
    private func commit(_ effects: [AlarmEffect], awaited: Bool = true) -> StateWrite? {
        guard !effects.isEmpty else { return nil }
        delegate?.show(engine)
        if !awaited { delegate?.perform(effects, engine: engine, authorization: authorization) }
        let write = effects.changesState ? startWrite() : nil
        if awaited { delegate?.perform(effects, engine: engine, authorization: authorization) }
        if effects.changesState { documentUpdates.send(engine.documents) }
        // Wake the timer to plan again only when the next deadline is now earlier than its wait:
        // a later one costs at most one wake-up with nothing due, and most changes (a pause, a
        // stop, a timer far off) leave the earliest deadline where it was.
        if let sleeping, let next = engine.nextDeadline, next < sleeping.until { sleeping.task.cancel() }
        return write
    }

    /// Writes the state again when the last write failed (a full disk, since freed), so that
    /// what was answered `internal` becomes durable without waiting for the next change.
    ///
    /// - Returns: true when nothing is left unsaved.
    public func saveAfterFailedWrite() async -> Bool {
        guard lastWriteFailed.withLock({ $0 }), let write = startWrite() else { return true }
        guard await write.outcome() == nil else { return false }
        logger.notice("state saved after a failed write")
        return true
    }
}

/// One queued write of the node's state: its outcome once the state writer has run it.
public final class StateWrite: Sendable {
    private struct State {
        /// nil until settled; then the failure, or `.some(nil)` on success.
        var outcome: AlarmNodeError??
        var waiters: [@Sendable (AlarmNodeError?) -> Void] = []
    }

    private let state = Mutex(State())

    /// Records the outcome and calls whoever waits, on this thread.
    func settle(_ failure: AlarmNodeError?) {
        let waiters = state.withLock { state in
            state.outcome = .some(failure)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter(failure) }
    }

    /// Calls `body` with the write's failure (nil on success) once it is settled: at once when it is.
    func whenSettled(_ body: @escaping @Sendable (AlarmNodeError?) -> Void) {
        let known: AlarmNodeError?? = state.withLock { state in
            if state.outcome == nil { state.waiters.append(body) }
            return state.outcome
        }
        if let known { body(known) }
    }

    /// The write's failure, nil on success, once it is settled.
    func outcome() async -> AlarmNodeError? {
        await withCheckedContinuation { continuation in whenSettled { continuation.resume(returning: $0) } }
    }
}
