import FoundationEssentials
import Glibc
import Logging

/// A swift-log handler that writes to systemd's journal with its native protocol, so that each
/// metadata key is a field of its own (`journalctl -u alarmd -o json`, `journalctl CHIP=…`) and
/// the level is the entry's `PRIORITY`.
///
/// A key becomes a field name in capitals, other characters than letters and digits turned into
/// `_` (`alarmID` → `ALARMID`). The entry also carries `MESSAGE` (the message followed by its
/// metadata as `key=value`, as the plain log reads), `SYSLOG_IDENTIFIER`, `LOGGER` (the logger's
/// label) and `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`. An entry the journal does not take is
/// written to standard error instead.
public struct JournalLogHandler: StoredMetadataLogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let identifier: String
    private let journal: JournalSocket

    /// A handler for the journal when standard error is connected to it (systemd names that
    /// stream in `$JOURNAL_STREAM` for a service), else nil: then keep a stream handler.
    /// - Parameters:
    ///   - identifier: `SYSLOG_IDENTIFIER`, the name `journalctl` shows.
    ///   - socketPath: the journal's socket; tests pass their own.
    public init?(
        label: String, identifier: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        socketPath: String = "/run/systemd/journal/socket"
    ) {
        guard Self.standardErrorIsJournal(environment["JOURNAL_STREAM"]), let journal = JournalSocket(path: socketPath) else {
            return nil
        }
        self.label = label
        self.identifier = identifier
        self.journal = journal
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let sortedKeys = merged.keys.sorted()
        let text = ([event.message.description] + sortedKeys.map { "\($0)=\(merged[$0]!)" }).joined(separator: " ")
        var fields: [(String, String)] = [
            ("MESSAGE", text), ("PRIORITY", String(Self.priority(event.level))), ("SYSLOG_IDENTIFIER", identifier),
            ("LOGGER", label), ("CODE_FILE", event.file), ("CODE_LINE", String(event.line)), ("CODE_FUNC", event.function),
        ]
        fields += sortedKeys.map { (Self.fieldName($0), "\(merged[$0]!)") }
        if !journal.send(Self.encode(fields)) { StandardStream.error.write("\(event.level) \(label): \(text)\n") }
    }

    /// syslog's priority for a swift-log level.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// A journal field name for a metadata key: capitals, digits and `_`, not starting with `_`
    /// or a digit (the journal drops such fields).
    static func fieldName(_ key: String) -> String {
        let name = String(key.uppercased().unicodeScalars.map { scalar in
            ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) ? Character(scalar) : "_"
        })
        guard let first = name.unicodeScalars.first, ("A"..."Z").contains(first) else { return "F" + name }
        return name
    }

    /// The native protocol: `NAME=value\n`, or for a value with a line break, the name, a line
    /// break, the value's length as 64-bit little endian, the value and a line break.
    static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            bytes += Array(name.utf8)
            if value.contains("\n") {
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.utf8.count).littleEndian) { bytes += $0 }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes += Array(value.utf8)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// True when `$JOURNAL_STREAM` (`device:inode`) is the file standard error is open on.
    static func standardErrorIsJournal(_ journalStream: String?) -> Bool {
        guard let parts = journalStream?.split(separator: ":"), parts.count == 2,
            let device = UInt64(parts[0]), let inode = UInt64(parts[1])
        else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}

/// A datagram socket connected to the journal, open for the life of the process. Sendable: its
/// one stored property is immutable, and `send(2)` on one socket is safe from any thread.
final class JournalSocket: Sendable {
    private let descriptor: Int32

    init?(path: String) {
        guard var address = try? ServiceNotifier.unixAddress(path) else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let connected = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, address.length) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Sends one entry; false when the journal did not take it (too large, or gone).
    func send(_ bytes: [UInt8]) -> Bool { Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count }
}
