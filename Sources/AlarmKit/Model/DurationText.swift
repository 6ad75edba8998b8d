import FoundationEssentials

/// Durations as people write them: `90s`, `10m`, `1h30m`, `1d`, units in words (`10 min`,
/// `10mins`, `1 hour 30 minutes`), milliseconds (`30ms`), or plain seconds (`45`, `2.5`).
public enum DurationText {
    /// The unit words read, by their size in seconds.
    static let units: [(size: Double, words: Set<String>)] = [
        (86_400, ["d", "day", "days"]),
        (3600, ["h", "hr", "hrs", "hour", "hours"]),
        (60, ["m", "min", "mins", "minute", "minutes"]),
        (1, ["s", "sec", "secs", "second", "seconds"]),
        (0.001, ["ms", "msec", "millisecond", "milliseconds"]),
    ]

    /// The number of seconds `text` names, or nil when it is not a duration. Parts go from the
    /// largest unit to the smallest, each unit once; spaces may stand between and inside parts.
    public static func seconds(from text: String) -> TimeInterval? {
        let text = text.trimming(where: { $0.isWhitespace && !$0.isNewline }).lowercased()
        if let plain = Double(text) { return plain.isFinite ? plain : nil }
        var total = 0.0
        var lastUnit = Double.infinity
        var rest = Substring(text)
        func skipSpaces() { rest = rest.drop { $0 == " " } }
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            rest = rest.dropFirst(number.count)
            skipSpaces()
            let word = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(word.count)
            skipSpaces()
            guard let value = Double(number), let unit = units.first(where: { $0.words.contains(String(word)) })?.size,
                  unit < lastUnit else { return nil }
            total += value * unit
            lastUnit = unit
        }
        return lastUnit.isFinite ? total : nil
    }

    /// True when `text` is a bare number, which names seconds only by convention.
    public static func isPlainNumber(_ text: String) -> Bool { Double(text.trimming(where: \.isWhitespace))?.isFinite == true }

    /// A compact form: `1h30m`, `10m`, `45s`, `1m30.5s`; `∞` when not finite or from 10^15 s (some 30 million years) on.
    public static func format(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, seconds < 1e15 else { return "∞" }
        let exact = max(0, seconds)
        let isWhole = exact.rounded(.down) == exact
        // Rounded to tenths before the units are taken: 59.97 s reads 1m, not 60.0s.
        var rest = isWhole ? exact : roundedTenths(exact) / 10
        var parts: [String] = []
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)] where rest >= size {
            let count = (rest / size).rounded(.down)
            parts.append("\(Int(count))\(unit)")
            rest -= count * size
        }
        if rest > 0 || parts.isEmpty {
            let tenths = Int(roundedTenths(rest))
            parts.append(isWhole ? "\(Int(rest))s" : "\(tenths / 10).\(tenths % 10)s")
        }
        return parts.joined()
    }

    /// `seconds` × 10 rounded as `printf("%.1f")` rounds `seconds`: by its exact binary value,
    /// half to even only on a true tie. The product alone can round onto a tie that is not one
    /// (0.45 is a little more than 0.45; 0.45 × 10 is exactly 4.5).
    static func roundedTenths(_ seconds: Double) -> Double {
        let scaled = seconds * 10
        let down = scaled.rounded(.down)
        guard scaled - down == 0.5 else { return scaled.rounded() }
        // What the multiplication rounded away, exactly (a fused multiply-add).
        let lost = (-scaled).addingProduct(seconds, 10)
        if lost != 0 { return lost > 0 ? down + 1 : down }
        return down.truncatingRemainder(dividingBy: 2) == 0 ? down : down + 1
    }
}
