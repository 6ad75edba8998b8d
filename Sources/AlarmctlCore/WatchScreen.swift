import AlarmKit
import Foundation
import LinuxSystem

/// Everything `alarmctl watch` shows, as last heard from the node's retained topics and events.
public struct WatchState: Sendable, Equatable {
    public var node: String
    public var status: NodeStatus?
    public var documents: [AlarmDocument] { didSet { rememberTitles() } }
    /// The title of every alarm seen, so that events of removed alarms still name them.
    public private(set) var titles: [UUID: String] = [:]
    /// The node's recent events, oldest first.
    public var events: [AlarmEvent] = []
    /// A broker connection problem, shown until the node is heard from again.
    public var connectionProblem: String?

    /// How many events the screen keeps.
    public static let eventsKept = 6

    public init(node: String, status: NodeStatus? = nil, documents: [AlarmDocument] = []) {
        self.node = node
        self.status = status
        self.documents = documents
        rememberTitles()
    }

    private mutating func rememberTitles() {
        for document in documents { titles[document.id] = AlarmText.title(of: document) }
    }

    /// Adds an event, keeping the latest `eventsKept`.
    public mutating func record(_ event: AlarmEvent) { events = Array((events + [event]).suffix(Self.eventsKept)) }
}

/// The `alarmctl watch` screen as lines of text no wider than the terminal: pure, so it is tested
/// without a terminal. On a terminal it has ANSI colours and a last line saying how to quit.
public enum WatchScreen {
    public static func render(_ state: WatchState, now: Date, timeZone: TimeZone, width: Int, onTerminal: Bool) -> [String] {
        let width = max(width, 20)
        let painter = Painter(enabled: onTerminal)
        var lines = [header(state, now: now, timeZone: timeZone, width: width, painter: painter)]
        if let problem = state.connectionProblem { lines.append(painter.paint(truncate("broker: \(problem)", to: width), .alert)) }
        lines.append(painter.paint(String(repeating: "─", count: width), .dim))
        let documents = Rendering.displayOrder(state.documents, now: now)
        if documents.isEmpty { lines.append(painter.paint("no alarms", .dim)) }
        let shortIDs = AlarmSelection.shortIDs(documents.map(\.id))
        let titleWidth = min(documents.map { TerminalText.columns(AlarmText.title(of: $0)) }.max() ?? 0, max(8, width / 4))
        // The id is the least useful column: it goes first when the title, state, time left and
        // a progress bar do not fit beside it.
        let idWidth = shortIDs.values.map(\.count).max() ?? 0
        let showIDs = width >= idWidth + 2 + titleWidth + 2 + Self.stateWidth + 2 + Self.timeWidth + 2 + Self.minimumBarWidth
        for document in documents {
            lines.append(row(document, shortID: shortIDs[document.id] ?? "", showID: showIDs, titleWidth: titleWidth,
                             now: now, timeZone: timeZone, width: width, painter: painter))
        }
        if !state.events.isEmpty {
            lines.append(painter.paint(String(repeating: "─", count: width), .dim))
            for event in state.events.reversed() {
                let text = truncate(AlarmText.printable(eventLine(event, titles: state.titles, timeZone: timeZone)), to: width)
                lines.append(painter.paint(text, event.name == .alerting || event.name == .missed ? .alert : .dim))
            }
        }
        // Piped, there is nothing to quit with Ctrl-C: a reader of the frames needs no hint.
        if onTerminal { lines.append(painter.paint(truncate("Ctrl-C quits", to: width), .dim)) }
        return lines
    }

    /// A progress bar of `width` cells, eighth-cell precise: `██████▌░░░░`.
    public static func bar(fraction: Double, width: Int) -> String {
        guard width > 0 else { return "" }
        let eighths = Int((min(max(fraction, 0), 1) * Double(width * 8)).rounded())
        let (full, partial) = (eighths / 8, eighths % 8)
        let partials = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        let filled = String(repeating: "█", count: full) + partials[partial]
        return filled + String(repeating: "░", count: width - full - (partial > 0 ? 1 : 0))
    }

    // MARK: Parts

    private static func header(_ state: WatchState, now: Date, timeZone: TimeZone, width: Int, painter: Painter) -> String {
        let clock = ScheduleMath.timeOfDayText(of: now, in: timeZone, withSeconds: true)
        let online = state.status.map { $0.isOnline ? "online" : "OFFLINE" } ?? "status unknown"
        var facts = ["node \(state.node)", online, timeZone.identifier, state.documents.count == 1 ? "1 alarm" : "\(state.documents.count) alarms"]
        if state.status?.clockSynchronized == false { facts.append("clock not synchronized") }
        let left = truncate(facts.joined(separator: " · "), to: max(0, width - clock.count - 1))
        let gap = String(repeating: " ", count: max(1, width - TerminalText.columns(left) - clock.count))
        let style: Painter.Style = state.status?.isOnline == false ? .alert : .bold
        return painter.paint(left, style) + gap + clock
    }

    private static let stateWidth = 9, timeWidth = 16
    /// The narrowest progress bar with its percentage.
    private static let minimumBarWidth = 12

    private static func row(
        _ document: AlarmDocument, shortID: String, showID: Bool, titleWidth: Int, now: Date, timeZone: TimeZone, width: Int,
        painter: Painter
    ) -> String {
        // Without the id, the title gives way before the time left does.
        let idPart = showID ? "\(shortID)  " : ""
        let titleWidth = max(4, min(titleWidth, width - idPart.count - 2 - stateWidth - 2 - timeWidth))
        let title = pad(truncate(AlarmText.title(of: document), to: titleWidth), to: titleWidth)
        let stateText = pad(document.state.rawValue, to: stateWidth)
        let timeText = pad(truncate(AlarmText.next(of: document, now: now, timeZone: timeZone), to: timeWidth), to: timeWidth)
        let fixedWidth = idPart.count + titleWidth + 2 + stateWidth + 2 + timeWidth + 2
        let rest = max(0, width - fixedWidth)
        var tail = ""
        let style: Painter.Style
        switch document.state {
        case .alerting: (style, tail) = (.alert, truncate("alarmctl stop|snooze \(shortID)", to: rest))
        case .scheduled: (style, tail) = (.plain, truncate(AlarmText.repeats(of: document), to: rest))
        case .countdown, .paused:
            style = document.state == .countdown ? .running : .paused
            if let progress = AlarmText.progress(of: document, now: now), rest >= minimumBarWidth {
                let percent = "\(Int((progress.fraction * 100).rounded(.down)))%"
                tail = painter.paint(bar(fraction: progress.fraction, width: rest - 5), style) + " " + pad(percent, to: 4, left: true)
            }
        }
        let head = fixedWidth - 2 > width
            ? truncate("\(idPart)\(title)  \(stateText)  \(timeText)", to: width)
            : "\(idPart)\(painter.paint(title, document.state == .alerting ? .bold : .plain))  \(painter.paint(stateText, style))  \(timeText)"
        return tail.isEmpty ? head : "\(head)  \(tail)"
    }

    private static func eventLine(_ event: AlarmEvent, titles: [UUID: String], timeZone: TimeZone) -> String {
        var parts = [ScheduleMath.timeOfDayText(of: event.at, in: timeZone, withSeconds: true), pad(event.name.rawValue, to: 13)]
        if let id = event.alarmID {
            parts.append(String(id.uuidString.prefix(8)))
            // An alarm gone before the watch began (`missed`, `silenced`) is named by its event.
            if let title = titles[id] ?? event.details["title"]?.string { parts.append(title) }
        }
        if event.name == .button, let button = event.details["button"]?.string, let press = event.details["press"]?.string {
            return (parts + [button, "\(press) press"]).joined(separator: "  ")
        }
        let details = event.details.filter { $0.key != "title" }.sorted { $0.key < $1.key }.compactMap { key, value -> String? in
            switch value {
            case .number(let late) where key == "late": late > 0 ? "late \(DurationText.format(late))" : nil
            case .string(let text): "\(key) \(text)"
            default: "\(key) \(JSONOutput.line(value))"
            }
        }
        return (parts + details).joined(separator: "  ")
    }
}

/// ANSI styles, or nothing when colours are off.
struct Painter {
    /// Each style's ANSI escape.
    enum Style: String {
        case plain = "", bold = "\u{1B}[1m", dim = "\u{1B}[2m"
        case alert = "\u{1B}[1;97;41m", running = "\u{1B}[32m", paused = "\u{1B}[33m"
    }

    let enabled: Bool

    func paint(_ text: String, _ style: Style) -> String {
        guard enabled, style != .plain, !text.isEmpty else { return text }
        return style.rawValue + text + "\u{1B}[0m"
    }
}
