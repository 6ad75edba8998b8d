import Foundation
import Logging

/// What a node keeps on disk: the authorization decision and every alarm.
public struct NodeState: Sendable, Hashable, Codable {
    /// The version of this layout; a node refuses files written by a newer version.
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var authorization: AlarmManager.AuthorizationState
    public var alarms: [AlarmRecord]

    public init(authorization: AlarmManager.AuthorizationState = .notDetermined, alarms: [AlarmRecord] = []) {
        self.schemaVersion = Self.currentSchemaVersion
        self.authorization = authorization
        self.alarms = alarms
    }
}

/// Carries out what the engine decides. Implemented by the daemon (state file, MQTT, GPIO).
public protocol AlarmNodeDelegate: Sendable {
    /// Makes `state` durable. Called before an operation is acknowledged; throwing undoes it.
    func persist(_ state: NodeState) throws
    /// Carries out effects once they are durable: publish, sound, run intents. Must not block.
    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState)
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
    private var engine: AlarmEngine
    private var authorization: AlarmManager.AuthorizationState
    private let clock: any AlarmClock
    private let delegate: (any AlarmNodeDelegate)?
    private let prompt: (any AuthorizationPrompt)?
    private let logger: Logger
    private var sleeper: Task<Void, Never>?
    private var pendingPrompt: Task<AlarmManager.AuthorizationState, Never>?

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

    public var authorizationState: AlarmManager.AuthorizationState { authorization }

    // MARK: Operations

    /// Schedules or replaces an alarm; asks for authorization first while it is undetermined.
    public func schedule(
        id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>
    ) async throws(AlarmManager.AlarmError) -> AlarmDocument {
        if authorization == .notDetermined { _ = await requestAuthorization() }
        guard authorization == .authorized else { throw .unauthorized(authorization) }
        try apply { engine, now throws(AlarmManager.AlarmError) in
            try engine.schedule(id: id, configuration: configuration, now: now)
        }
        guard let document = engine.document(for: id) else {
            // A timer whose countdown is already over alerts, or is missed, on the spot.
            throw .internal("alarm \(id.uuidString) ended as soon as it was scheduled")
        }
        return document
    }

    /// Carries out `operation` on alarm `id`; returns its document, or nil when it is gone.
    @discardableResult
    public func perform(_ operation: AlarmOperation, id: UUID) throws(AlarmManager.AlarmError) -> AlarmDocument? {
        try apply { engine, now throws(AlarmManager.AlarmError) in
            switch operation {
            case .cancel: try engine.cancel(id: id, now: now)
            case .stop: try engine.stop(id: id, now: now)
            case .countdown: try engine.countdown(id: id, now: now)
            case .pause: try engine.pause(id: id, now: now)
            case .resume: try engine.resume(id: id, now: now)
            }
        }
        return engine.document(for: id)
    }

    /// The alert's secondary button for alarm `id` (snooze, or its custom intent).
    public func secondaryAction(id: UUID) throws(AlarmManager.AlarmError) {
        try apply { engine, now throws(AlarmManager.AlarmError) in try engine.secondaryAction(id: id, now: now) }
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
            let sleep = Task { [clock] in _ = try? await clock.sleep(until: deadline) }
            sleeper = sleep
            await withTaskCancellationHandler { await sleep.value } onCancel: { sleep.cancel() }
        }
    }

    // MARK: Internals

    /// Runs an operation on a copy of the engine, persists the result, then commits and
    /// carries out its effects. A failed operation or a failed write changes nothing.
    private func apply(
        _ change: (inout AlarmEngine, Date) throws(AlarmManager.AlarmError) -> [AlarmEffect]
    ) throws(AlarmManager.AlarmError) {
        var next = engine
        let effects = try change(&next, clock.now)
        if effects.changesState, let delegate {
            do {
                try delegate.persist(NodeState(authorization: authorization, alarms: Array(next.records.values)))
            } catch {
                logger.error("state not saved; operation refused", metadata: ["error": "\(error)"])
                throw .internal("the node could not save its state, so nothing changed: \(error)")
            }
        }
        commit(next, effects)
    }

    /// Time passing must happen even when the disk fails: the alarm still sounds.
    private func advanceTime(_ change: (inout AlarmEngine, Date) -> [AlarmEffect]) {
        var next = engine
        let effects = change(&next, clock.now)
        if effects.changesState, let delegate {
            do {
                try delegate.persist(NodeState(authorization: authorization, alarms: Array(next.records.values)))
            } catch {
                logger.error("state not saved after time passed", metadata: ["error": "\(error)"])
            }
        }
        commit(next, effects)
    }

    private func commit(_ next: AlarmEngine, _ effects: [AlarmEffect]) {
        engine = next
        guard !effects.isEmpty else { return }
        delegate?.perform(effects, engine: engine, authorization: authorization)
        if effects.changesState { documentUpdates.send(engine.documents) }
        // The next deadline may have moved: wake the timer to plan again.
        sleeper?.cancel()
    }

    private func setAuthorization(_ decision: AlarmManager.AuthorizationState) {
        let previous = authorization
        authorization = decision
        do {
            try delegate?.persist(NodeState(authorization: decision, alarms: Array(engine.records.values)))
        } catch {
            logger.error("authorization decision not saved", metadata: ["error": "\(error)"])
        }
        guard previous != decision else { return }
        logger.info("authorization changed", metadata: ["authorization": "\(decision.rawValue)"])
        let event = AlarmEvent(.authorization, alarmID: nil, at: clock.now,
                               details: ["authorization": .string(decision.rawValue)])
        delegate?.perform([.event(event)], engine: engine, authorization: decision)
        authorizationUpdates.send(decision)
    }
}
