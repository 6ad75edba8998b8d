import Foundation
import Testing
@testable import AlarmKit

@Suite("NodeStateEncoder")
struct NodeStateEncoderTests {
    let start = date("2026-11-22T10:00:00Z")

    /// An engine holding an alarm in every phase: scheduled (fixed and weekly), counting down,
    /// paused, alerting.
    func engineInEveryPhase() throws -> (AlarmEngine, ids: [UUID]) {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")), records: [], clockTrusted: true)
        let ids = (0..<5).map { _ in UUID() }
        _ = try engine.schedule(id: ids[0], configuration: configuration(schedule: .fixed(start + 86_400)), now: start)
        _ = try engine.schedule(id: ids[1], configuration: configuration(schedule: weekly(7, 30, [.monday, .friday])), now: start)
        _ = try engine.schedule(id: ids[2], configuration: configuration(preAlert: 600, title: "Tea \"strong\" / ünïcode"), now: start)
        _ = try engine.schedule(id: ids[3], configuration: configuration(preAlert: 300), now: start)
        _ = try engine.perform(.pause, id: ids[3], now: start + 10)
        _ = try engine.schedule(id: ids[4], configuration: configuration(preAlert: 5), now: start)
        _ = engine.advance(to: start + 20)
        return (engine, ids)
    }

    func state(_ engine: AlarmEngine, _ authorization: AlarmManager.AuthorizationState = .authorized) -> NodeState {
        NodeState(authorization: authorization, alarms: Array(engine.records.values))
    }

    func expectSameBytes(_ encoder: NodeStateEncoder, _ state: NodeState) throws {
        let incremental = try encoder.encode(state)
        let whole = Array(try AlarmJSON.encoder.encode(state))
        #expect(String(decoding: incremental, as: UTF8.self) == String(decoding: whole, as: UTF8.self))
    }

    @Test func writesWhatTheJSONEncoderWritesForEveryPhase() throws {
        let (engine, _) = try engineInEveryPhase()
        #expect(Set(engine.records.values.map(\.phase.state)).count >= 4)
        try expectSameBytes(NodeStateEncoder(), state(engine))
    }

    @Test func anEmptyStateAndEachAuthorization() throws {
        let encoder = NodeStateEncoder()
        for authorization in [AlarmManager.AuthorizationState.notDetermined, .authorized, .denied] {
            try expectSameBytes(encoder, NodeState(authorization: authorization))
        }
    }

    /// The cache must never serve a record's old bytes: each step changes, adds or removes one.
    @Test func followsChangesAdditionsAndRemovalsAcrossCalls() throws {
        let encoder = NodeStateEncoder()
        var (engine, ids) = try engineInEveryPhase()
        try expectSameBytes(encoder, state(engine))
        _ = try engine.perform(.resume, id: ids[3], now: start + 30)
        try expectSameBytes(encoder, state(engine))
        _ = try engine.perform(.cancel, id: ids[0], now: start + 31)
        try expectSameBytes(encoder, state(engine))
        _ = try engine.schedule(id: ids[1], configuration: configuration(schedule: weekly(8, 0, [.sunday]), title: "Replaced"), now: start + 32)
        try expectSameBytes(encoder, state(engine, .denied))
        _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: start + 33)
        try expectSameBytes(encoder, state(engine))
    }

    /// Revisions let the cache skip comparing records; a record changed outside the engine must
    /// not pass for the one it was copied from.
    @Test func aRecordChangedOutsideTheEngineIsEncodedAgain() throws {
        let encoder = NodeStateEncoder()
        let (engine, ids) = try engineInEveryPhase()
        try expectSameBytes(encoder, state(engine))
        var alarms = Array(engine.records.values)
        let index = try #require(alarms.firstIndex { $0.id == ids[3] })
        #expect(alarms[index].revision != 0)
        alarms[index].phase = .paused(totalCountdownDuration: 300, previouslyElapsedDuration: 42)
        #expect(alarms[index].revision == 0)
        try expectSameBytes(encoder, NodeState(authorization: .authorized, alarms: alarms))
        // Restored from disk (no revisions), then stamped by an engine: the same bytes again.
        let decoded = try AlarmJSON.decoder.decode(NodeState.self, from: Data(try encoder.encode(state(engine))))
        #expect(decoded.alarms.allSatisfy { $0.revision == 0 })
        try expectSameBytes(encoder, decoded)
        let restored = AlarmEngine(configuration: engine.configuration, records: decoded.alarms)
        try expectSameBytes(encoder, state(restored))
    }

    @Test func revisionsAreUniqueAndLeftOutOfEquality() throws {
        var (engine, ids) = try engineInEveryPhase()
        let before = try #require(engine.records[ids[3]])
        _ = try engine.perform(.resume, id: ids[3], now: start + 30)
        _ = try engine.perform(.pause, id: ids[3], now: start + 30)
        let after = try #require(engine.records[ids[3]])
        #expect(Set(engine.records.values.map(\.revision)).count == ids.count)
        #expect(!after.isSameRevision(as: before) && after.revision > before.revision)
        var unstamped = after
        unstamped.lastOccurrenceDay = after.lastOccurrenceDay
        #expect(unstamped.revision == 0 && unstamped == after && unstamped.hashValue == after.hashValue)
        #expect(!unstamped.isSameRevision(as: unstamped))
    }

    @Test func dropsTheConfigurationsOfAlarmsNoLongerInTheState() throws {
        let shared = SplicingAlarmEncoder()
        let encoder = NodeStateEncoder(records: shared)
        var (engine, ids) = try engineInEveryPhase()
        _ = try encoder.encode(state(engine))
        #expect(shared.cachedCount == ids.count)
        // A record of a removed alarm, encoded by someone else after its removal.
        let removed = try #require(engine.records[ids[0]])
        _ = try engine.perform(.cancel, id: ids[0], now: start + 31)
        _ = try shared.encode(removed)
        _ = try encoder.encode(state(engine))
        #expect(shared.cachedCount == ids.count - 1)
    }

    @Test func decodesBackToTheSameState() throws {
        let (engine, _) = try engineInEveryPhase()
        let original = state(engine)
        let decoded = try AlarmJSON.decoder.decode(NodeState.self, from: Data(try NodeStateEncoder().encode(original)))
        #expect(decoded == original)
    }
}

@Suite("NodeStateEncoder: journal lines, and the engine's changed alarms")
struct NodeStateEncoderJournalTests {
    let start = date("2026-11-22T10:00:00Z")

    func engine() throws -> (AlarmEngine, [UUID]) {
        var engine = AlarmEngine(configuration: .init(timeZone: zone("Europe/Berlin")), records: [], clockTrusted: true)
        let ids = (0..<3).map { _ in UUID() }
        for id in ids { _ = try engine.schedule(id: id, configuration: configuration(preAlert: 600), now: start) }
        return (engine, ids)
    }

    func decode(_ line: [UInt8]?) throws -> NodeStateChange {
        let line = try #require(line)
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        return try AlarmJSON.decoder.decode(NodeStateChange.self, from: Data(line))
    }

    /// What the node's writer would append now: the engine's changed alarms since the last call.
    func change(_ engine: inout AlarmEngine, _ authorization: AlarmManager.AuthorizationState = .authorized) -> NodeStateChange {
        let (changed, removed) = engine.takeChangedIDs()
        return NodeStateChange(alarms: changed.compactMap { engine.records[$0] }, authorization: authorization, removed: removed)
    }

    @Test func theEngineReportsWhatItStoredOrRemovedSinceItWasLastAsked() throws {
        var (engine, ids) = try engine()
        #expect(engine.takeChangedIDs().changed == ids)
        #expect(engine.takeChangedIDs() == ([], []))
        _ = try engine.perform(.pause, id: ids[2], now: start + 5)
        _ = try engine.perform(.pause, id: ids[0], now: start + 5)
        _ = try engine.perform(.cancel, id: ids[1], now: start + 6)
        let taken = engine.takeChangedIDs()
        #expect(taken.changed == [ids[0], ids[2]])  // in the engine's order
        #expect(taken.removed == [ids[1]])
        // Time passing changes alarms too: the timers' countdowns end.
        _ = try engine.perform(.resume, id: ids[0], now: start + 7)
        _ = engine.takeChangedIDs()
        _ = engine.advance(to: start + 7 + 601)
        #expect(engine.takeChangedIDs().changed == [ids[0]])
    }

    @Test func aLineHoldsTheChangeAndNothingWhenThereIsNone() throws {
        var (engine, ids) = try engine()
        let encoder = NodeStateEncoder()
        _ = engine.takeChangedIDs()
        _ = try encoder.encode(NodeState(authorization: .authorized, alarms: Array(engine.records.values)))
        #expect(try encoder.encodeLine(change(&engine)) == nil)

        _ = try engine.perform(.pause, id: ids[1], now: start + 5)
        _ = try engine.perform(.cancel, id: ids[2], now: start + 6)
        let line = try decode(try encoder.encodeLine(change(&engine)))
        #expect(line.alarms == [try #require(engine.records[ids[1]])])
        #expect(line.removed == [ids[2]])
        #expect(line.authorization == .authorized)

        let authorizationOnly = try decode(try encoder.encodeLine(change(&engine, .denied)))
        #expect(authorizationOnly.alarms.isEmpty && authorizationOnly.removed.isEmpty && authorizationOnly.authorization == .denied)
    }

    @Test func linesAppliedToTheSnapshotGiveTheState() throws {
        var (engine, ids) = try engine()
        let encoder = NodeStateEncoder()
        _ = engine.takeChangedIDs()
        let snapshot = NodeState(authorization: .authorized, alarms: Array(engine.records.values))
        _ = try encoder.encode(snapshot)
        var changes: [NodeStateChange] = []
        _ = try engine.perform(.pause, id: ids[0], now: start + 5)
        changes.append(try decode(try encoder.encodeLine(change(&engine))))
        _ = try engine.perform(.cancel, id: ids[1], now: start + 6)
        _ = try engine.schedule(id: UUID(), configuration: configuration(preAlert: 60), now: start + 7)
        changes.append(try decode(try encoder.encodeLine(change(&engine))))
        let applied = snapshot.applying(changes)
        #expect(applied.alarms == Array(engine.records.values))
        // Applying the entries again changes nothing: records are whole.
        #expect(applied.applying(changes) == applied)
        // The next snapshot reuses the lines' records: the same bytes as the JSON encoder.
        let whole = NodeState(authorization: .authorized, alarms: Array(engine.records.values))
        #expect(try encoder.encode(whole) == Array(try AlarmJSON.encoder.encode(whole)))
    }

    @Test func aSnapshotWithAGenerationIsWhatTheJSONEncoderWrites() throws {
        let (engine, _) = try engine()
        var state = NodeState(authorization: .authorized, alarms: Array(engine.records.values))
        state.journalGeneration = 7
        let bytes = try NodeStateEncoder().encode(state)
        #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: try AlarmJSON.encoder.encode(state), as: UTF8.self))
        #expect(NodeStateChange.generation(inJournalHeader: NodeStateChange.journalHeader(generation: 7).dropLast()) == 7)
        #expect(NodeStateChange.generation(inJournalHeader: Array(#"{"journalGeneration":7x}"#.utf8)) == nil)
    }
}
