import AlarmKit
import Foundation

/// What `--json` prints: docs/mqtt.md's documents, sorted keys, dates as ISO 8601 UTC.
public enum JSONOutput {
    /// `value` as indented JSON.
    public static func pretty(_ value: some Encodable) -> String {
        encode(value, formatting: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    }

    /// `value` as one line of JSON, for streams of updates (`alarmctl watch --json`).
    public static func line(_ value: some Encodable) -> String {
        encode(value, formatting: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// The outcome of an operation on one alarm, as an element of the array `stop`, `snooze`,
    /// `pause`, `resume` and `cancel` print: `{"id":…,"ok":true,"alarm":{…}|null}` or
    /// `{"id":…,"ok":false,"error":{"code":…,"message":…}}`, with `"nothingToDo":true` when that is no failure.
    public static func operationResult(id: UUID, result: Result<AlarmDocument?, AlarmctlError>, nothingToDo: Bool = false) -> JSONValue {
        let id = JSONValue.string(id.uuidString)
        return switch result {
        case .success(let document): .object(["id": id, "ok": .bool(true), "alarm": document.flatMap { try? JSONValue(encoding: $0) } ?? .null])
        case .failure(let error):
            .object(["id": id, "ok": .bool(false), "error": errorObject(error)].merging(nothingToDo ? ["nothingToDo": .bool(true)] : [:]) { $1 })
        }
    }

    /// A failed command: `{"ok":false,"error":{"code":…,"message":…,"exitStatus":…}}`.
    public static func failure(_ error: AlarmctlError) -> JSONValue { .object(["ok": .bool(false), "error": errorObject(error)]) }

    private static func errorObject(_ error: AlarmctlError) -> JSONValue {
        .object(["code": .string(error.code), "message": .string(error.message),
                 "exitStatus": .number(Double(error.exitStatus.rawValue))])
    }

    private static func encode(_ value: some Encodable, formatting: JSONEncoder.OutputFormatting) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        // The model's types write their dates themselves; nothing else here holds a date.
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null"
    }
}
