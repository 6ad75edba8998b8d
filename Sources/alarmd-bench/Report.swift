import Foundation
import Synchronization

/// Everything one run measured: rows of latencies (p50/p99/max) or single values, the goals
/// with their verdicts, and what could not be measured.
final class Report: Sendable {
    struct Row: Codable, Sendable {
        var section: String
        var name: String
        /// Latencies, in µs; shown in ms unless `unit` is "µs".
        var stats: Stats?
        /// A single value (a rate, a size, a count) in `unit`.
        var value: Double?
        var unit: String?
        var isBaseline = false
        var note: String?
    }

    struct Goal: Codable, Sendable {
        var section: String
        var goal: String
        var measured: String
        /// nil: not measured.
        var met: Bool?
    }

    struct Document: Codable, Sendable {
        var date: String
        var mode: String
        var machine: [String: String]
        var rows: [Row] = []
        var goals: [Goal] = []
        var notes: [String] = []
    }

    private let document: Mutex<Document>

    init(mode: String) {
        document = Mutex(Document(date: ISO8601DateFormatter().string(from: Date()), mode: mode, machine: Self.machine()))
    }

    func add(_ section: String, _ name: String, _ stats: Stats, inMicroseconds: Bool = false, baseline: Bool = false, note: String? = nil) {
        document.withLock {
            $0.rows.append(Row(section: section, name: name, stats: stats, unit: inMicroseconds ? "µs" : "ms", isBaseline: baseline, note: note))
        }
    }

    func add(_ section: String, _ name: String, value: Double, unit: String, baseline: Bool = false, note: String? = nil) {
        document.withLock { $0.rows.append(Row(section: section, name: name, value: value, unit: unit, isBaseline: baseline, note: note)) }
    }

    func goal(_ section: String, _ goal: String, measured: String, met: Bool?) {
        document.withLock { $0.goals.append(Goal(section: section, goal: goal, measured: measured, met: met)) }
    }

    func setMachine(_ key: String, _ value: String) {
        document.withLock { $0.machine[key] = value }
    }

    func note(_ text: String) {
        document.withLock { $0.notes.append(text) }
    }

    /// The table of rows, then the goals and notes, as plain text.
    func text() -> String {
        let document = document.withLock { $0 }
        func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
            let padding = String(repeating: " ", count: max(0, width - text.count))
            return right ? padding + text : text + padding
        }
        var lines = ["alarmd-bench \(document.mode), \(document.date)",
                     document.machine.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "), ""]
        lines.append(pad("section", 11) + pad("measurement", 62) + pad("n", 6, right: true) + pad("p50", 10, right: true)
                     + pad("p99", 10, right: true) + pad("max", 10, right: true) + "  unit  note")
        for row in document.rows {
            let name = (row.isBaseline ? "[baseline] " : "") + row.name
            var line = pad(row.section, 11) + pad(name, 62)
            if let stats = row.stats {
                let shown = row.unit == "µs" ? { (value: Double) in String(format: "%.2f", value) } : milliseconds
                line += pad("\(stats.count)", 6, right: true) + pad(shown(stats.p50), 10, right: true)
                    + pad(shown(stats.p99), 10, right: true) + pad(shown(stats.max), 10, right: true) + "  " + pad(row.unit ?? "ms", 4)
            } else if let value = row.value {
                line += pad("", 6) + pad(Self.format(value), 30, right: true) + "  " + pad(row.unit ?? "", 4)
            }
            if let note = row.note { line += "  " + note }
            lines.append(line)
        }
        lines.append("")
        lines.append("goals:")
        for goal in document.goals {
            let verdict = goal.met.map { $0 ? "MET    " : "NOT MET" } ?? "n/a    "
            lines.append("  \(verdict) \(pad(goal.section, 10)) \(goal.goal): \(goal.measured)")
        }
        if !document.notes.isEmpty {
            lines.append("")
            lines.append("notes:")
            lines += document.notes.map { "  - " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(document.withLock { $0 }).write(to: URL(fileURLWithPath: path))
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "–" }
        if value == value.rounded(), abs(value) < 1e12 { return String(Int64(value)) }
        return String(format: abs(value) >= 100 ? "%.0f" : abs(value) >= 1 ? "%.2f" : "%.3f", value)
    }

    /// nproc, CPU model, kernel, Swift version (of the toolchain on PATH).
    private static func machine() -> [String: String] {
        var machine: [String: String] = ["nproc": "\(ProcessInfo.processInfo.activeProcessorCount)"]
        if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
           let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
           let colon = line.firstIndex(of: ":") {
            machine["cpu"] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var name = utsname()
        uname(&name)
        machine["kernel"] = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        machine["swift"] = "unknown (pass --swift-version)"
        return machine
    }
}
