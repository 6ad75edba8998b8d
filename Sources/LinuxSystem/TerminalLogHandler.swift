import Glibc
import Logging

/// swift-log's stream format on standard error (`<time> <level> <label>: key=value… [<source>]
/// <message>`), stamped to the millisecond from `CLOCK_REALTIME`. swift-log's own handler reads
/// `time()`, the kernel's coarse clock, which still shows the last second a few milliseconds into
/// the next: an alert on the minute was logged a second early.
public struct TerminalLogHandler: StoredMetadataLogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String

    public init(label: String) { self.label = label }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let pairs = merged.keys.sorted().map { " \($0)=\(merged[$0]!)" }.joined()
        StandardStream.error.write("\(Self.timestamp()) \(event.level) \(label):\(pairs) [\(event.source)] \(event.message)\n")
    }

    /// The time now in the local zone, to the millisecond: `2026-11-29T14:16:00.001+0000`.
    static func timestamp() -> String {
        var now = timespec(), parts = tm()
        clock_gettime(CLOCK_REALTIME, &now)
        tzset()  // as localtime() does: the machine's zone may have changed since the last line
        localtime_r(&now.tv_sec, &parts)
        var date = [CChar](repeating: 0, count: 24), zone = [CChar](repeating: 0, count: 8)
        let dateLength = strftime(&date, date.count, "%Y-%m-%dT%H:%M:%S", &parts)
        let zoneLength = strftime(&zone, zone.count, "%z", &parts)
        // CChar is signed on x86-64 and unsigned on arm64: the bytes either way.
        let text = { (chars: [CChar], length: Int) in String(decoding: chars.prefix(length).map(UInt8.init(truncatingIfNeeded:)), as: UTF8.self) }
        return "\(text(date, dateLength)).\(String(1000 + now.tv_nsec / 1_000_000).dropFirst())\(text(zone, zoneLength))"
    }
}

/// A handler whose metadata is its `metadata` property, which the subscript swift-log requires reads and writes.
public protocol StoredMetadataLogHandler: LogHandler {}

extension StoredMetadataLogHandler {
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
