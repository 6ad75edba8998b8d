import AlarmKit
import FoundationEssentials

/// An alarm as the daemon keeps it on disk, in `<state-directory>/alarms/<id>.json`: its
/// configuration (as in the MQTT document) and where it stands in its lifecycle, e.g.
/// `{"configuration":{…},"id":"…","phase":"countdown","startDate":"…","fireDate":"…",…}`.
struct StoredAlarm: Codable {
    var record: AlarmRecord

    init(_ record: AlarmRecord) { self.record = record }

    private enum CodingKeys: String, CodingKey {
        case id, configuration, phase, alertDate, totalCountdownDuration, previouslyElapsedDuration,
             startDate, fireDate, isPreAlert, isSnooze, since, pendingOccurrenceDay, lastOccurrenceDay, group, silenceSnoozed
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Date { try container.decodeDate(forKey: key) }
        // A file edited by hand, or damaged, may hold values no command would have been accepted
        // with: such an alarm is refused here, so that the file is kept aside rather than run.
        func countdownSeconds(_ key: CodingKeys, within limit: ClosedRange<TimeInterval>) throws -> TimeInterval {
            let value = try container.decode(TimeInterval.self, forKey: key)
            guard value.isFinite, limit.contains(value) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container,
                                                       debugDescription: "\(value) is not a duration from \(limit.lowerBound) to \(limit.upperBound) seconds")
            }
            return value
        }
        func countdownDurations() throws -> (total: TimeInterval, elapsed: TimeInterval) {
            let total = try countdownSeconds(.totalCountdownDuration, within: AlarmLimits.durations)
            return (total, try countdownSeconds(.previouslyElapsedDuration, within: 0...total))
        }
        let isSnooze = try container.decodeIfPresent(Bool.self, forKey: .isSnooze) ?? false
        let phase: AlarmRecord.Phase
        switch try container.decode(Alarm.State.self, forKey: .phase) {
        case .scheduled: phase = .scheduled(alertDate: try date(.alertDate))
        case .countdown:
            let (total, elapsed) = try countdownDurations()
            phase = .countdown(.init(
                totalCountdownDuration: total, previouslyElapsedDuration: elapsed,
                startDate: try date(.startDate), fireDate: try date(.fireDate),
                isPreAlert: try container.decode(Bool.self, forKey: .isPreAlert),
                isSnooze: isSnooze))
        case .paused:
            let (total, elapsed) = try countdownDurations()
            phase = .paused(totalCountdownDuration: total, previouslyElapsedDuration: elapsed, isSnooze: isSnooze)
        case .alerting: phase = .alerting(since: try date(.since), alertDate: try date(.alertDate))
        }
        let configuration = try container.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, forKey: .configuration)
        do {
            // Any instant will do: a fixed date in the past is a missed alarm, not a damaged file.
            try configuration.validate(now: .distantPast)
        } catch { throw DecodingError.dataCorruptedError(forKey: .configuration, in: container, debugDescription: error.message) }
        record = AlarmRecord(
            id: try container.decode(UUID.self, forKey: .id),
            configuration: configuration,
            phase: phase,
            pendingOccurrenceDay: try container.decodeIfPresent(LocalDay.self, forKey: .pendingOccurrenceDay),
            lastOccurrenceDay: try container.decodeIfPresent(LocalDay.self, forKey: .lastOccurrenceDay),
            group: try container.decodeIfPresent(String.self, forKey: .group),
            silenceSnoozed: try container.decodeIfPresent(Bool.self, forKey: .silenceSnoozed) ?? false)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.id, forKey: .id)
        try container.encode(record.configuration, forKey: .configuration)
        try container.encodeIfPresent(record.pendingOccurrenceDay, forKey: .pendingOccurrenceDay)
        try container.encodeIfPresent(record.lastOccurrenceDay, forKey: .lastOccurrenceDay)
        try container.encodeIfPresent(record.group, forKey: .group)
        if record.silenceSnoozed { try container.encode(true, forKey: .silenceSnoozed) }
        try container.encode(record.state, forKey: .phase)
        switch record.phase {
        case .scheduled(let alertDate): try container.encodeDate(alertDate, forKey: .alertDate)
        case .countdown(let countdown):
            try container.encode(countdown.totalCountdownDuration, forKey: .totalCountdownDuration)
            try container.encode(countdown.previouslyElapsedDuration, forKey: .previouslyElapsedDuration)
            try container.encodeDate(countdown.startDate, forKey: .startDate)
            try container.encodeDate(countdown.fireDate, forKey: .fireDate)
            try container.encode(countdown.isPreAlert, forKey: .isPreAlert)
            // Written only for a snooze, so that other records read as they always did.
            if countdown.isSnooze { try container.encode(true, forKey: .isSnooze) }
        case .paused(let total, let elapsed, let isSnooze):
            try container.encode(total, forKey: .totalCountdownDuration)
            try container.encode(elapsed, forKey: .previouslyElapsedDuration)
            if isSnooze { try container.encode(true, forKey: .isSnooze) }
        case .alerting(let since, let alertDate):
            try container.encodeDate(since, forKey: .since)
            try container.encodeDate(alertDate, forKey: .alertDate)
        }
    }
}

/// The node-wide part of the state, `<state-directory>/node.json`: `{"authorization":…,"schemaVersion":3,"timeZone":…}`.
struct StoredNode: Codable, Equatable {
    /// The version of the state directory's layout; a node refuses a newer one. Version 3 keeps
    /// one file per alarm; versions 1 and 2 kept a single `state.json` (and a journal), which
    /// ``LegacyStateFile`` reads once to move it to this layout.
    static let currentSchemaVersion = 3

    var authorization: AlarmManager.AuthorizationState
    var schemaVersion = Self.currentSchemaVersion
    /// The zone the alarms' relative schedules were planned in: a start in another moves them (docs/time.md).
    var timeZone: String?
}
