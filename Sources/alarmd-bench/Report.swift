import Foundation

/// One line of the table: a budget of docs/performance.md beside its same-run baseline, or an information row.
struct Row: Codable {
    var row: String
    var what: String
    /// Latencies: p50 and p99 in ms, with their sample count; otherwise `value` in `unit`.
    var stats: Stats?
    var value: Double?
    var unit: String
    var baseline: String
    var budget: String
    /// "yes", "NO", "info" (no budget), "SKIPPED" or "not measured".
    var met: String
    /// The host's steal time while the row was measured, in percent.
    var steal: Double?
    var note: String?

    var measured: String {
        if let stats { return "\(ms(stats.p50)) / \(ms(stats.p99)) \(unit)" }
        return value.map { "\(number($0)) \(unit)" } ?? "–"
    }
}

/// The run's rows and what it ran on, as a table and as JSON.
final class Report {
    struct Document: Codable {
        var date: String
        var mode: String
        var machine: [String: String]
        var rows: [Row] = []
        var notes: [String] = []
    }

    private(set) var document: Document

    init(mode: String, machine extra: [String: String]) {
        var machine = extra
        machine["nproc"] = "\(ProcessInfo.processInfo.activeProcessorCount)"
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }), let colon = line.firstIndex(of: ":") {
            machine["cpu"] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var name = utsname()
        uname(&name)
        machine["kernel"] = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        machine["load average at start"] = Self.loadAverage()
        document = Document(date: ISO8601DateFormatter().string(from: Date()), mode: mode, machine: machine)
    }

    /// Adds a row in the order of docs/performance.md (by its number; in the order added within a number).
    func add(_ row: Row) {
        func number(_ row: Row) -> Int { Int(row.row.prefix { $0.isNumber }) ?? 0 }
        document.rows.insert(row, at: document.rows.lastIndex { number($0) <= number(row) }.map { $0 + 1 } ?? 0)
    }
    func note(_ text: String) { document.notes.append(text) }

    /// A latency row with a budget on its p99 (nil: information only).
    func latency(_ row: String, _ what: String, _ stats: Stats, baseline: String, budget: String, limit: Double?,
                 steal: Double? = nil, note: String? = nil) {
        let met = limit.map { stats.count > 0 && stats.p99 <= $0 ? "yes" : "NO" } ?? "info"
        add(Row(row: row, what: what, stats: stats, unit: "ms", baseline: baseline, budget: budget, met: met, steal: steal, note: note))
    }

    /// A single-value row with a budget (nil: information only).
    func value(_ row: String, _ what: String, _ value: Double, unit: String, baseline: String, budget: String, limit: Double?,
               steal: Double? = nil, note: String? = nil) {
        let met = limit.map { value <= $0 ? "yes" : "NO" } ?? "info"
        add(Row(row: row, what: what, value: value, unit: unit, baseline: baseline, budget: budget, met: met, steal: steal, note: note))
    }

    /// A row that could not be measured, with why.
    func missing(_ row: String, _ what: String, _ why: String, skipped: Bool = false) {
        add(Row(row: row, what: what, unit: "", baseline: "", budget: "", met: skipped ? "SKIPPED" : "not measured", note: why))
    }

    func text() -> String {
        document.machine["load average at end"] = Self.loadAverage()
        let header = ["row", "what", "n", "measured (p50 / p99)", "baseline (same run)", "budget", "met", "steal"]
        let cells = document.rows.map { row in
            [row.row, row.what, row.stats.map { "\($0.count)" } ?? "", row.measured, row.baseline, row.budget, row.met,
             row.steal.map { String(format: "%.1f%%", $0) } ?? ""]
        }
        let widths = header.indices.map { column in ([header] + cells).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
        var lines = ["alarmd-bench \(document.mode), \(document.date)",
                     document.machine.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "), "",
                     line(header), line(widths.map { String(repeating: "-", count: $0) })]
        lines += cells.map(line)
        let notes = document.rows.compactMap { row in row.note.map { "row \(row.row) (\(row.what)): \($0)" } } + document.notes
        if !notes.isEmpty { lines += [""] + notes.map { "- " + $0 } }
        return lines.joined(separator: "\n")
    }

    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(document).write(to: URL(fileURLWithPath: path))
    }

    private static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// Milliseconds with three decimals.
func ms(_ value: Double) -> String { value.isNaN ? "–" : String(format: "%.3f", value) }

/// A value as short as it can be said: 12, 3.40, 0.123.
func number(_ value: Double) -> String {
    if value.isNaN { return "–" }
    if value == value.rounded(), abs(value) < 1e12 { return String(Int64(value)) }
    return String(format: abs(value) >= 100 ? "%.0f" : abs(value) >= 1 ? "%.2f" : "%.3f", value)
}
