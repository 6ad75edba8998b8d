import AlarmKit
import Foundation
import Glibc

/// The commands and states the bench sends and seeds, in the JSON of docs/mqtt.md.
enum Workloads {
    static let attributes = ##"{"presentation":{"alert":{"title":"Bench","stopButton":{"text":"Stop","textColor":"#FFFFFF","systemImageName":"stop"}},"countdown":{"title":"Bench timer","pauseButton":{"text":"Pause","textColor":"#34C759","systemImageName":"pause"}},"paused":{"title":"Paused","resumeButton":{"text":"Resume","textColor":"#34C759","systemImageName":"play"}}},"tintColor":"#34C759"}"##

    /// A one-shot alarm at a wall-clock instant given in ms since 1970.
    static func fixedAlarm(at milliseconds: Int64, sound: String = "default") -> String {
        let soundJSON = sound == "default" ? #""default""# : #"{"named":"\#(sound)"}"#
        return #"{"schedule":{"fixed":"\#(isoTime(milliseconds: milliseconds))"},"attributes":\#(attributes),"sound":\#(soundJSON)}"#
    }

    /// A timer of `seconds`.
    static func timer(seconds: Int) -> String {
        #"{"countdownDuration":{"preAlert":\#(seconds)},"attributes":\#(attributes)}"#
    }

    static func schedule(id: UUID, configuration: String) -> String {
        #"{"id":"\#(id.uuidString)","configuration":\#(configuration)}"#
    }

    static func alarmID(_ id: UUID) -> String { #"{"id":"\#(id.uuidString)"}"# }

    /// `2026-11-22T07:00:00.123Z`, exactly the given millisecond (no floating point on the way).
    static func isoTime(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(milliseconds % 1000))
    }

    static func configuration(_ json: String) throws -> AlarmManager.AlarmConfiguration<JSONValue> {
        try AlarmJSON.strictDecoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: Data(json.utf8))
    }

    /// `count` one-shot alarms a month or more ahead, one minute apart, as the engine keeps them.
    static func farAheadRecords(count: Int) throws -> [AlarmRecord] {
        let start = (Nanos.realtime() / 1_000_000 / 1000 + 30 * 86_400) * 1000
        return try (0..<count).map { index in
            let milliseconds = start + Int64(index) * 60_000
            return AlarmRecord(id: UUID(), configuration: try configuration(fixedAlarm(at: milliseconds)),
                               phase: .scheduled(alertDate: Date(timeIntervalSince1970: Double(milliseconds) / 1000)))
        }
    }

    /// Writes a state file (as alarmd writes it) holding `count` alarms far ahead. Scheduling them
    /// over MQTT instead would rewrite the whole file once per alarm: quadratic in the count.
    static func seedState(directory: String, alarms count: Int) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        _ = try farAheadRecords(count: count)
        throw BenchError("seeding a state file is replaced in the benchmark's rewrite")
    }
}
