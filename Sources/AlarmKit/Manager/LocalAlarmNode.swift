import Dispatch
import FoundationEssentials
import Logging
import Synchronization

/// What a node keeps on disk: the authorization decision and every alarm.
public struct NodeState: Sendable, Hashable, Codable {
    /// The version of this layout; a node refuses files written by a newer version. Version 2
    /// added ``journalGeneration``: a version 1 node would ignore the journal and lose its changes.
    public static let currentSchemaVersion = 2

    public var schemaVersion: Int
    public var authorization: AlarmManager.AuthorizationState
    public var alarms: [AlarmRecord]
    /// Which journal continues this snapshot: only a journal with the same generation holds
    /// changes made after it (see ``NodeStateChange``). Nil in a snapshot that no journal follows.
    public var journalGeneration: UInt64?

    public init(authorization: AlarmManager.AuthorizationState = .notDetermined, alarms: [AlarmRecord] = []) {
        self.schemaVersion = Self.currentSchemaVersion
        self.authorization = authorization
        self.alarms = alarms
    }
}

/// Carries out what the engine decides. Implemented by the daemon (state file, MQTT, GPIO).
public protocol AlarmNodeDelegate: Sendable {
    /// Makes `state` durable. Called on the node's state-writer thread, one call at a time, before
    /// the replies of the changes it covers are given; a throw answers them with `internal`,
    /// and the state is written again with the next change.
    func persist(_ state: NodeState) throws
    /// Whether the next write must hold the whole state (``persist(_:)``) rather than what
    /// changed since the previous write (``persist(change:)``). Asked on the node's actor while
    /// no write runs. After a write that threw it must be true: what that write held was lost.
    /// The default is true.
    var wantsWholeState: Bool { get }
    /// Makes durable what changed since the previous write, like ``persist(_:)``. Called only
    /// when ``wantsWholeState`` was false.
    func persist(change: NodeStateChange) throws
    /// Shows a change on the outputs that must not wait for anything (the buzzer, the LED):
    /// called first, before the change's write starts and before ``perform(_:engine:authorization:)``.
    /// Called on the node's actor after every change that has effects; must not block. The
    /// default does nothing.
    func show(_ engine: AlarmEngine)
    /// Carries out effects as soon as a change is applied, while its write runs: publish, run
    /// intents. Called on the node's actor; must not block.
    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState)
}

extension AlarmNodeDelegate {
    public func show(_ engine: AlarmEngine) {}
    public var wantsWholeState: Bool { true }
    public func persist(change: NodeStateChange) throws {
        preconditionFailure("\(Self.self) says it does not want the whole state, so it must implement persist(change:)")
    }
}

/// Asks a person on the node whether apps may schedule alarms (the hardware prompt).
public protocol AuthorizationPrompt: Sendable {
    /// Returns `.authorized`, `.denied`, or `.notDetermined` when nobody answered.
    func requestDecision() async -> AlarmManager.AuthorizationState
}

/// An operation on an existing alarm.
public enum AlarmOperation: String, Sendable, Hashable, Codable, CaseIterable {
    case cancel, stop, countdown, pause, resume
}

/// An alarm node in this process: the engine, driven by a clock, with its effects carried out
/// by a delegate. Operations are durable (persisted by the delegate) before they return.
///
/// `run()` is its timer: it sleeps until the next due instant only, never polling.
public actor LocalAlarmNode {
    /// The engine. It lives in a store rather than in the actor's own storage so that the
    /// documents `documentUpdates` builds lazily are read from it when someone asks: no snapshot
    /// of the engine is kept between changes, and a change mutates the only copy (with a kept
    /// snapshot, copy-on-write made every change copy every alarm: 0.66 ms at 10,000 alarms).
    private let engineStore: EngineStore
    /// The engine now: a copy, to read. Let it go before the next change (a copy kept across a
    /// change makes that change copy every alarm).
    private var engine: AlarmEngine { engineStore.read { $0 } }
    private var authorization: AlarmManager.AuthorizationState
    private let clock: any AlarmClock
    private let delegate: (any AlarmNodeDelegate)?
    private let prompt: (any AuthorizationPrompt)?
    private let logger: Logger
    private var sleeper: Task<Void, Never>?
    /// The deadline the timer waits for, nil while it is not waiting.
    private var sleepingUntil: Date?
    private var pendingPrompt: Task<AlarmManager.AuthorizationState, Never>?

    // Group commit: changes are numbered as they are applied; one write at a time makes every
    // change up to its number durable, so many changes share one fsync.
    private let stateWriter = DispatchQueue(label: "alarmkit.state-writer")
    private let groupCommit = GroupCommit()

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
        self.engineStore = EngineStore(engine)
        self.authorization = state.authorization
        self.clock = clock
        self.prompt = authorizationPrompt
        self.delegate = delegate
        self.logger = logger
        self.documentUpdates = Broadcast(engine.documents)
        self.authorizationUpdates = Broadcast(state.authorization)
    }

    // MARK: Reading

    public var documents: [AlarmDocument] { engine.documents }

    public var currentEngine: AlarmEngine { engine }

    /// Calls `body` with the engine on the node's actor, so that no change lands between reading
    /// it and what `body` does (show it on the hardware, publish every document, say). The
    /// delegate's `show` and `perform` run on the same actor, so the two never interleave.
    /// `body` must not block.
    public func withEngine<Result: Sendable>(_ body: @Sendable (AlarmEngine) -> Result) -> Result {
        body(engine)
    }

    public var authorizationState: AlarmManager.AuthorizationState { authorization }

    // MARK: Operations

    /// Schedules or replaces an alarm; asks for authorization first while it is undetermined.
    /// Returns once the change is on disk.
    public func schedule(
        id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>
    ) async throws(AlarmManager.AlarmError) -> AlarmDocument {
        let submission = await submit(.schedule(id: id, configuration: configuration))
        switch await waitUntilDurable(submission) {
        case .alarm(let document?): return document
        case .failure(let error): throw error
        default: throw .internal("alarm \(id.uuidString) was not scheduled")
        }
    }

    /// Carries out `operation` on alarm `id` once it is on disk; returns the alarm's document,
    /// or nil when the operation removed it.
    @discardableResult
    public func perform(_ operation: AlarmOperation, id: UUID) async throws(AlarmManager.AlarmError) -> AlarmDocument? {
        switch await waitUntilDurable(await submit(.alarm(operation, id: id))) {
        case .alarm(let document): return document
        case .failure(let error): throw error
        default: return engine.document(for: id)
        }
    }

    /// The alert's secondary button for alarm `id` (snooze, or its custom intent).
    public func secondaryAction(id: UUID) async throws(AlarmManager.AlarmError) {
        let version = try applyNow { engine, now throws(AlarmManager.AlarmError) in try engine.secondaryAction(id: id, now: now) }
        if let version, let error = await groupCommit.outcome(of: version) { throw error }
    }

    /// Applies several changes in one turn of the actor and starts writing them without waiting
    /// for the disk: for input nobody awaits a reply to, such as a hardware button, whose alarms
    /// must stop together rather than one write apart. `plan` picks the steps from the current
    /// engine; `apply` carries out each one, and must change nothing when it throws (as the
    /// engine's operations do). A refused step is returned with its error; the steps before and
    /// after it stay in effect. `leadingEffects` (the event that
    /// reports the input, say) are carried out first, before the steps' own.
    public func applyWithoutWaiting<Step: Sendable>(
        reporting leadingEffects: [AlarmEffect] = [],
        planning plan: @Sendable (AlarmEngine) -> [Step],
        _ apply: @Sendable (inout AlarmEngine, Step, Date) throws(AlarmManager.AlarmError) -> [AlarmEffect]
    ) -> [(Step, AlarmManager.AlarmError)] {
        let now = clock.now
        var effects = leadingEffects
        let refusals = engineStore.change { engine in
            var refusals: [(Step, AlarmManager.AlarmError)] = []
            for step in plan(engine) {
                do throws(AlarmManager.AlarmError) {
                    effects += try apply(&engine, step, now)
                } catch {
                    refusals.append((step, error))
                }
            }
            return refusals
        }
        commit(effects)
        return refusals
    }

    /// A command applied to the alarms, whose reply may still wait for the disk.
    public struct Submission: Sendable {
        /// The reply once the change is durable.
        public let reply: NodeReply
        /// The change's number, nil when nothing needs writing.
        let version: Int?
    }

    /// Applies a command now, in the order commands are submitted, without waiting for the disk;
    /// `waitUntilDurable` or `whenDurable` then gives the reply. Many commands submitted in a row
    /// share one write.
    public func submit(_ action: NodeCommand.Action) async -> Submission {
        do throws(AlarmManager.AlarmError) {
            switch action {
            case .schedule(let id, let configuration):
                if authorization == .notDetermined { _ = await requestAuthorization() }
                guard authorization == .authorized else { throw .unauthorized(authorization) }
                let version = try applyNow { engine, now throws(AlarmManager.AlarmError) in
                    try engine.schedule(id: id, configuration: configuration, now: now)
                }
                guard let document = engine.document(for: id) else {
                    // A timer whose countdown is already over alerts, or is missed, on the spot.
                    throw .internal("alarm \(id.uuidString) ended as soon as it was scheduled")
                }
                return Submission(reply: .alarm(document), version: version)
            case .alarm(let operation, let id):
                let version = try applyNow { engine, now throws(AlarmManager.AlarmError) in
                    try engine.perform(operation, id: id, now: now)
                }
                return Submission(reply: .alarm(engine.document(for: id)), version: version)
            case .requestAuthorization:
                let decision = await requestAuthorization()
                // Whatever is unsaved (the decision, or changes a failed write left) is written
                // now, so the reply cannot wait for a write nobody starts.
                return Submission(reply: .authorization(decision), version: writeUnsaved())
            case .list:
                return Submission(reply: .alarms(engine.documents), version: nil)
            }
        } catch {
            return Submission(reply: .failure(error), version: nil)
        }
    }

    /// Waits until every change applied so far is on disk (before shutting down, say); returns
    /// the write's failure, if any.
    @discardableResult
    public func flush() async -> AlarmManager.AlarmError? {
        guard let version = writeUnsaved() else { return nil }
        return await groupCommit.outcome(of: version)
    }

    /// When some change is not on disk, starts writing it under a fresh number (so a write that
    /// failed earlier is tried again rather than reported) and returns that number.
    private func writeUnsaved() -> Int? {
        guard delegate != nil, groupCommit.unsavedVersion != nil else { return nil }
        let version = groupCommit.numberChange()
        startWriteIfIdle()
        return version
    }

    /// The submission's reply once its change is on disk, or the write's failure. Waits for the
    /// writer only, not for the actor.
    public nonisolated func waitUntilDurable(_ submission: Submission) async -> NodeReply {
        guard let version = submission.version, let error = await groupCommit.outcome(of: version) else { return submission.reply }
        return .failure(error)
    }

    /// Calls `answer` with the submission's reply once its change is on disk (or with the
    /// write's failure): at once when nothing needs writing, else on the state writer's thread
    /// right after the write, so that the reply leaves without another thread's wake-up.
    /// `answer` must not block.
    public nonisolated func whenDurable(_ submission: Submission, answer: @escaping @Sendable (NodeReply) -> Void) {
        guard let version = submission.version else { return answer(submission.reply) }
        groupCommit.whenSettled(version) { error in
            answer(error.map(NodeReply.failure) ?? submission.reply)
        }
    }

    /// Asks for authorization when it is undetermined and a prompt exists; concurrent requests
    /// share one prompt. Returns the decision.
    public func requestAuthorization() async -> AlarmManager.AuthorizationState {
        guard authorization == .notDetermined, let prompt else { return authorization }
        let request = pendingPrompt ?? Task { await prompt.requestDecision() }
        pendingPrompt = request
        let decision = await request.value
        pendingPrompt = nil
        if authorization == .notDetermined, decision != .notDetermined {
            setAuthorization(decision)
        }
        return authorization
    }

    /// Forgets the authorization decision (the daemon's local reset command).
    public func resetAuthorization() {
        setAuthorization(.notDetermined)
    }

    /// Tells the node the wall clock was stepped by `offset` seconds.
    public func wallClockStepped(by offset: TimeInterval) {
        advanceTime { engine, now in engine.wallClockStepped(by: offset, now: now) }
        // The clock's waits run on a monotonic clock: after a step the current one would end at
        // the wrong wall-clock time (too late after a forward step), even if no alarm changed.
        sleeper?.cancel()
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
        advanceTime { engine, now in engine.resumeAlerts(now: now) }
        while !Task.isCancelled {
            advanceTime { engine, now in engine.advance(to: now) }
            let deadline = engine.nextDeadline ?? .distantFuture
            // The waiting task carries out what fell due itself, as soon as the clock wakes it:
            // handing back to this loop first would cost another trip through the pool before
            // an alarm sounds. It prefers the clock's own thread, when the clock has one: it then
            // goes on there as the deadline passes, and the node's actor (a default actor, free
            // while nothing else runs on it) runs on that thread too, rather than after another
            // thread wakes up. The loop then re-plans.
            let sleep = Task(executorPreference: clock.wakeExecutor) { [clock] in
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                await self.advanceToNow()
            }
            sleeper = sleep
            sleepingUntil = deadline
            await withTaskCancellationHandler { await sleep.value } onCancel: { sleep.cancel() }
            sleepingUntil = nil
        }
    }

    /// Carries out what is due now.
    private func advanceToNow() {
        advanceTime { engine, now in engine.advance(to: now) }
    }

    // MARK: Internals

    /// Runs an operation on the engine and, when it succeeds, carries out its effects at once
    /// (the buzzer must not wait for the disk). Returns the change's number to await its
    /// durability, or nil when nothing needs writing.
    ///
    /// The engine is changed in place: an operation that throws has changed nothing (every
    /// operation checks before it changes anything; `EngineRefusalTests` holds it to that), and a
    /// copy to fall back on would cost a copy of every alarm on every change.
    private func applyNow(
        _ change: (inout AlarmEngine, Date) throws(AlarmManager.AlarmError) -> [AlarmEffect]
    ) throws(AlarmManager.AlarmError) -> Int? {
        let now = clock.now
        let effects = try engineStore.change { engine throws(AlarmManager.AlarmError) in try change(&engine, now) }
        return commit(effects)
    }

    /// Time passing is carried out whatever the disk does: the alarm still sounds.
    private func advanceTime(_ change: (inout AlarmEngine, Date) -> [AlarmEffect]) {
        let now = clock.now
        commit(engineStore.change { engine in change(&engine, now) })
    }

    /// Numbers a change that must reach the disk and starts a write if none is running.
    private func markChanged() -> Int? {
        guard delegate != nil else { return nil }
        let version = groupCommit.numberChange()
        startWriteIfIdle()
        return version
    }

    /// Writes the current state on the writer's own thread (never on Swift's cooperative pool),
    /// covering every change applied so far. The writer answers the waiting replies itself and
    /// comes back to the actor only to start the next write.
    private func startWriteIfIdle() {
        guard let delegate, let version = groupCommit.beginWrite() else { return }
        let (changedIDs, removedIDs) = engineStore.change { $0.takeChangedIDs() }
        // Only the changed records, when the delegate can take them: a copy of every record on
        // every write costs milliseconds at 10,000 alarms.
        let write: StateWrite = delegate.wantsWholeState
            ? .whole(NodeState(authorization: authorization, alarms: Array(engine.records.values)))
            : .change(NodeStateChange(alarms: changedIDs.compactMap { engine.records[$0] }, authorization: authorization, removed: removedIDs))
        stateWriter.async { [groupCommit, logger] in
            var failure: AlarmManager.AlarmError?
            do {
                switch write {
                case .whole(let state): try delegate.persist(state)
                case .change(let change): try delegate.persist(change: change)
                }
            } catch {
                logger.error("state not saved", metadata: ["error": "\(error)", "version": "\(version)"])
                failure = .internal("the node could not save its state (\(error)): the change is in effect but not on disk; it is saved with the next successful write")
            }
            if groupCommit.finishWrite(version: version, failure: failure) {
                Task { await self.startWriteIfIdle() }
            }
        }
    }

    /// What one write holds.
    private enum StateWrite: Sendable {
        case whole(NodeState)
        case change(NodeStateChange)
    }

    /// After the engine changed: shows it on the outputs (an alarm's buzzer waits for nothing),
    /// starts writing it when the change must reach the disk, then carries out the effects (so
    /// the disk works while they are published). Returns the change's number, or nil when
    /// nothing needs writing.
    @discardableResult
    private func commit(_ effects: [AlarmEffect]) -> Int? {
        guard !effects.isEmpty else { return nil }
        delegate?.show(engine)
        let version = effects.changesState ? markChanged() : nil
        delegate?.perform(effects, engine: engine, authorization: authorization)
        if effects.changesState {
            // Built from the store when someone looks: at once while observed, else on the next
            // read. From a copy taken under the lock, so that building them holds no change up.
            documentUpdates.sendLazily { [engineStore] in engineStore.read { $0 }.documents }
        }
        // Wake the timer to plan again only when the next deadline is now earlier than its wait:
        // a later one costs at most one wake-up with nothing due, and most changes (a pause, a
        // stop, a timer far off) leave the earliest deadline where it was.
        if let sleepingUntil, let next = engine.nextDeadline, next < sleepingUntil {
            sleeper?.cancel()
        }
        return version
    }

    private func setAuthorization(_ decision: AlarmManager.AuthorizationState) {
        let previous = authorization
        authorization = decision
        _ = markChanged()
        guard previous != decision else { return }
        logger.info("authorization changed", metadata: ["authorization": "\(decision.rawValue)"])
        let event = AlarmEvent(.authorization, alarmID: nil, at: clock.now,
                               details: ["authorization": .string(decision.rawValue)])
        delegate?.perform([.event(event)], engine: engine, authorization: decision)
        authorizationUpdates.send(decision)
    }
}

/// The node's engine behind a lock: the actor changes it in place; the lazily built documents
/// read it from whichever thread asks for them.
private final class EngineStore: Sendable {
    private let engine: Mutex<AlarmEngine>

    init(_ engine: AlarmEngine) {
        self.engine = Mutex(engine)
    }

    func read<Result>(_ body: (AlarmEngine) -> Result) -> Result {
        engine.withLock { body($0) }
    }

    func change<Result, Failure: Error>(_ body: (inout AlarmEngine) throws(Failure) -> Result) throws(Failure) -> Result {
        try engine.withLock { engine throws(Failure) in try body(&engine) }
    }
}
