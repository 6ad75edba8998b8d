import AlarmKit
import Foundation
import LinuxSystem

/// The text of `alarmctl list`, `show`, `preview` and of command results: pure functions of their input.
public enum Rendering {
    /// Alerting alarms first, then countdowns by when they end, a paused one as if resumed `now`
    /// (so that pausing or resuming leaves it in place, under a finger about to tap again), and
    /// scheduled alarms by their next alert.
    public static func displayOrder(_ documents: [AlarmDocument], now: Date) -> [AlarmDocument] {
        func rank(_ document: AlarmDocument) -> (Int, Date) {
            switch document.presentationState {
            case .alert?: (0, .distantPast)
            case .countdown(let countdown)?: (1, countdown.fireDate)
            case .paused(let paused)?: (1, now + paused.totalCountdownDuration - paused.previouslyElapsedDuration)
            case nil: (3, document.nextAlertDate ?? .distantFuture)
            }
        }
        return documents.sorted { first, second in
            let (a, b) = (rank(first), rank(second))
            return a.0 != b.0 ? a.0 < b.0 : a.1 != b.1 ? a.1 < b.1 : first.id.uuidString < second.id.uuidString
        }
    }

    /// The `alarmctl list` table: short id, kind, title, state, next alert or remaining time, repeats.
    /// With a `width`, the title column shrinks so that rows fit.
    public static func table(_ documents: [AlarmDocument], now: Date, timeZone: TimeZone, width: Int? = nil) -> String {
        let ordered = displayOrder(documents, now: now)
        let shortIDs = AlarmSelection.shortIDs(ordered.map(\.id))
        let header = ["ID", "KIND", "TITLE", "STATE", "NEXT", "REPEATS"]
        let rows = ordered.map { document in
            [shortIDs[document.id] ?? document.id.uuidString, AlarmText.kind(of: document), AlarmText.title(of: document),
             document.state.rawValue, AlarmText.next(of: document, now: now, timeZone: timeZone), AlarmText.repeats(of: document)]
        }
        var widths = header.indices.map { column in ([header] + rows).map { TerminalText.columns($0[column]) }.max() ?? 0 }
        if let width {
            let total = widths.reduce(0, +) + 2 * (widths.count - 1)
            widths[2] = max(5, widths[2] - max(0, total - width))
        }
        return ([header] + rows).map { row in
            row.indices.map { column in
                let cell = truncate(row[column], to: widths[column])
                return column == row.count - 1 ? cell : pad(cell, to: widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// What `alarmctl list` warns of beside the table: a configuration file the node could not use,
    /// alarms missing from it (a damaged state file), and alarms shown as due that the node holds
    /// while its clock is not synchronized.
    public static func listWarnings(_ documents: [AlarmDocument], status: NodeStatus?, now: Date) -> [String] {
        var warnings = [status?.configurationProblem, status?.stateFileProblem].compactMap { $0 }
        if status?.clockSynchronized == false, documents.contains(where: { $0.state != .alerting && $0.nextAlertDate ?? .distantFuture <= now }) {
            warnings.append("the node's clock is not synchronized: the alarms shown as due wait until it is (10 minutes after alarmd started at the most), then ring, or are reported missed if later than the missed-alarm grace")
        }
        return warnings
    }

    /// The `alarmctl show` details of one alarm.
    public static func details(_ document: AlarmDocument, now: Date, timeZone: TimeZone) -> String {
        let configuration = document.configuration
        let alert = configuration.attributes.presentation.alert
        var lines: [(String, String)] = [
            ("id", document.id.uuidString),
            ("kind", AlarmText.kind(of: document)),
            ("title", AlarmText.title(of: document)),
            ("state", document.state.rawValue),
            ("next", AlarmText.next(of: document, now: now, timeZone: timeZone)),
            ("group", document.group.map { "\($0) (scheduled through it: `--group \($0)` reaches it)" } ?? "- (this node's own)"),
        ]
        if let date = document.nextAlertDate {
            lines.append(("next alert", "\(ScheduleMath.localText(of: date, in: timeZone)) (\(AlarmJSON.string(from: date)))"))
        }
        if let progress = AlarmText.progress(of: document, now: now) {
            lines.append(("countdown", "\(AlarmText.clock(progress.remaining)) of \(AlarmText.clock(progress.total)) left"))
        }
        lines.append(("schedule", AlarmText.schedule(of: document, timeZone: timeZone)))
        let countdown = configuration.countdownDuration
        lines.append(("pre-alert", countdown?.preAlert.map(DurationText.format) ?? "-"))
        lines.append(("snooze", (countdown?.postAlert ?? countdown?.preAlert).map(DurationText.format) ?? "-"))
        lines.append(("sound", configuration.sound.name))
        var buttons = AlarmText.printable(alert.stopButton.text)
        if let secondary = alert.secondaryButton {
            buttons += ", \(AlarmText.printable(secondary.text)) (\(alert.secondaryButtonBehavior?.rawValue ?? "custom"))"
        }
        lines.append(("buttons", buttons))
        lines.append(("tint", configuration.attributes.tintColor.hex))
        return labelled(lines)
    }

    /// One `label  value` line each, the values aligned: `alarmctl show` and `alarmctl status`.
    public static func labelled(_ lines: [(String, String)]) -> String {
        let labelWidth = lines.map(\.0.count).max() ?? 0
        return lines.map { "\(pad($0.0, to: labelWidth))  \($0.1)" }.joined(separator: "\n")
    }

    /// One line about an alarm just scheduled or changed: `timer 2F1E6A4C "Tea": countdown, in 10:00`.
    public static func summary(_ document: AlarmDocument, now: Date, timeZone: TimeZone) -> String {
        let shortID = String(document.id.uuidString.prefix(8))
        var text = "\(AlarmText.kind(of: document)) \(shortID) \"\(AlarmText.title(of: document))\": \(document.state.rawValue)"
        let next = AlarmText.next(of: document, now: now, timeZone: timeZone)
        if next != "-" { text += ", \(next)" }
        let repeats = AlarmText.repeats(of: document)
        if repeats != "-" && repeats != "once" { text += ", repeats \(repeats)" }
        return text
    }

    /// The `alarmctl preview` lines: each alert date in `timeZone` and in UTC.
    public static func preview(_ dates: [Date], timeZone: TimeZone) -> String {
        guard !dates.isEmpty else { return "no alert dates after that instant" }
        let numberWidth = String(dates.count).count
        let locals = dates.map { ScheduleMath.localText(of: $0, in: timeZone) }
        let localWidth = locals.map(\.count).max() ?? 0
        return dates.indices.map { index in
            "\(pad(String(index + 1), to: numberWidth, left: true))  \(pad(locals[index], to: localWidth))  \(AlarmJSON.string(from: dates[index]))"
        }.joined(separator: "\n")
    }
}

/// `text` cut to `width` terminal columns, ending in `…` when cut.
func truncate(_ text: String, to width: Int) -> String {
    guard TerminalText.columns(text) > width else { return text }
    let room = width > 1 ? width - 1 : max(0, width)
    var kept = "", used = 0
    for character in text {
        used += TerminalText.columns(character)
        guard used <= room else { break }
        kept.append(character)
    }
    return width > 1 ? kept + "…" : kept
}

/// `text` padded with spaces to `width` terminal columns, on the right (or the left).
func pad(_ text: String, to width: Int, left: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - TerminalText.columns(text)))
    return left ? padding + text : text + padding
}
