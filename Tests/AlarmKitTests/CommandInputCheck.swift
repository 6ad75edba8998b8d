import AlarmKit
import FoundationEssentials

/// What must hold for any command a node receives, as the libFuzzer target (Tests/Fuzz, run by
/// scripts/fuzz) and `FuzzCorpusTests` check it. The input's first byte picks the operation (its
/// command topic's last level), the rest is the payload. Nothing may trap; a rejection names what
/// is wrong; an accepted schedule's configuration is validated, read against a node's intent
/// topics, planned (relative schedules), and survives a round trip through its JSON form.
///
/// - Returns: what did not hold; empty when all did.
func commandInputViolations(_ input: [UInt8]) -> [String] {
    guard let selector = input.first else { return [] }
    let operations = NodeCommand.Operation.allCases.map(\.rawValue) + ["bogus"]
    let operation = operations[Int(selector) % operations.count]
    let now = Date(timeIntervalSince1970: 1_795_341_600)  // 2026-11-22T10:00:00Z
    switch NodeCommand.decode(operation: operation, payload: Array(input.dropFirst())) {
    case .failure(let rejection):
        return rejection.error.message.isEmpty ? ["a rejection of \(operation) without a message"] : []
    case .success(let command):
        guard case .schedule(_, let configuration, _) = command.action else { return [] }
        do {
            try configuration.validate(now: now)
        } catch {
            return error.message.isEmpty ? ["a validation failure without a message"] : []
        }
        var violations: [String] = []
        let intentTopics = IntentTopics(prefix: "alarmd", node: "bedroom", allowed: ["home/+/set", "garden/#"])
        for refused in intentTopics.refusals(in: configuration) where refused.reason.isEmpty {
            violations.append("an intent refusal without a reason for \(refused.field)")
        }
        if case .relative(let relative)? = configuration.schedule,
           let next = ScheduleMath.nextOccurrence(of: relative, after: now, in: TimeZone(identifier: "Europe/Berlin")!),
           next.date <= now {
            violations.append("the next occurrence \(next.date) is not after now")
        }
        do {
            let encoded = try AlarmJSON.encoder.encode(configuration)
            let decoded = try AlarmJSON.decoder.decode(AlarmManager.AlarmConfiguration<JSONValue>.self, from: encoded)
            if decoded != configuration {
                let again = (try? AlarmJSON.encoder.encode(decoded)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
                violations.append("an accepted configuration changed in a JSON round trip: \(String(decoding: encoded, as: UTF8.self)) became \(again)")
            }
        } catch {
            violations.append("an accepted configuration does not survive a JSON round trip: \(error)")
        }
        return violations
    }
}
