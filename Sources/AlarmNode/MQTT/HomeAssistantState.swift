import AlarmKit
import FoundationEssentials

/// What the Home Assistant sensors show, published retained on `<base>/ha/state`.
public struct HomeAssistantState: Sendable, Hashable, Encodable {
    /// When the next alarm alerts (the soonest `nextAlertDate`, held alarms too), or nil.
    @InstantOrNull public var nextAlarm: Date?
    public var alerting: Bool
    /// When the soonest running countdown (pre-alert, timer or snooze) ends, or nil.
    @InstantOrNull public var countdownEnds: Date?
    /// How many alarms the node holds.
    public var alarms: Int

    /// What the engine holds now.
    public init(engine: AlarmEngine) {
        let records = engine.records.values
        nextAlarm = records.compactMap(\.nextAlertDate).min()
        alerting = records.contains { $0.state == .alerting }
        countdownEnds = records.compactMap { $0.state == .countdown ? $0.nextAlertDate : nil }.min()
        alarms = records.count
    }
}

/// The alarms sensor's attributes, published retained on `<base>/ha/alarms`:
/// `{"alarms":[{"id":…,"title":…,"state":…,"next":…,"remaining":…,"repeats":…}]}`, soonest first.
public struct HomeAssistantAlarmList: Sendable, Hashable, Encodable {
    /// One alarm as Home Assistant lists it.
    public struct Entry: Sendable, Hashable, Encodable {
        public var id: UUID
        public var title: String
        public var state: Alarm.State
        /// When it next alerts (a countdown's end included); nil while paused or ringing.
        @InstantOrNull public var next: Date?
        /// The seconds left while paused, which a dashboard shows beside the title; else nil.
        @ExplicitNull public var remaining: TimeInterval?
        /// `once`, `daily`, `weekdays`, `weekends` or `mon,wed,fri`; nil for a timer.
        @ExplicitNull public var repeats: String?
    }

    public var alarms: [Entry]

    /// Every alarm of `engine`, those that alert soonest first, then the paused and ringing ones.
    /// Visits every alarm: built only when an alarm changed, not as time passes.
    public init(engine: AlarmEngine) {
        alarms = engine.records.values.sorted(by: AlarmRecord.alertsSooner).map { record in
            let remaining: TimeInterval? = if case .paused(let total, let elapsed, _) = record.phase { total - elapsed } else { nil }
            return Entry(id: record.id, title: record.configuration.attributes.presentation.alert.title, state: record.state,
                         next: record.nextAlertDate, remaining: remaining, repeats: WeekdayList.describe(record.configuration.schedule))
        }
    }
}

/// What became of the last line written to the text entity, published retained on
/// `<base>/ha/schedule-result`: the text entity shows `state`, its attributes are the rest.
public struct HomeAssistantScheduleResult: Sendable, Hashable, Encodable {
    /// `scheduled: …`, or `error: …` with what to write instead; at most 255 characters.
    public var state: String
    /// The line as written.
    @ExplicitNull public var input: String?
    /// The error's message in full, when the line was refused.
    @ExplicitNull public var error: String?
    /// The alarm scheduled or cancelled, when there was one.
    @ExplicitNull public var alarmID: UUID?

    /// Before any line was written: an empty text.
    public static let ready = HomeAssistantScheduleResult(state: "", input: nil, error: nil, alarmID: nil)

    /// A line that scheduled `document`; its alert time in the node's `timeZone`, with the offset,
    /// and its days when it repeats: a day word read where a title was meant shows.
    public static func scheduled(_ input: String, _ document: AlarmDocument, timeZone: TimeZone) -> HomeAssistantScheduleResult {
        let title = document.configuration.attributes.presentation.alert.title
        let when = document.nextAlertDate.map { " at \($0.formatted(Date.ISO8601FormatStyle(timeZoneSeparator: .colon, timeZone: timeZone)))" } ?? ""
        let days = WeekdayList.describe(document.configuration.schedule)
        let repeats = days == nil || days == "once" ? "" : ", repeats \(days!)"
        return HomeAssistantScheduleResult(state: shortened("scheduled: \(title)\(when)\(repeats)"), input: input, error: nil, alarmID: document.id)
    }

    /// A `cancel` line that cancelled the alarms `ids`, named by `target`.
    public static func cancelled(_ input: String, _ target: String, ids: [UUID]) -> HomeAssistantScheduleResult {
        let count = ids.count == 1 ? "" : " (\(ids.count) alarms)"
        return HomeAssistantScheduleResult(state: shortened("cancelled: \(target)\(count)"), input: input, error: nil,
                                           alarmID: ids.count == 1 ? ids[0] : nil)
    }

    /// A line that could not be read, or that the node refused.
    public static func refused(_ input: String, message: String) -> HomeAssistantScheduleResult {
        HomeAssistantScheduleResult(state: shortened("error: \(message)"), input: input, error: message, alarmID: nil)
    }

    /// Home Assistant refuses a text state longer than the entity's maximum (it counts code points).
    static func shortened(_ text: String) -> String {
        guard text.unicodeScalars.count > HomeAssistantDiscovery.textMaximum else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(HomeAssistantDiscovery.textMaximum - 1))) + "…"
    }
}
