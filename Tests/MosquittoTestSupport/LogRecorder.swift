import Logging
import Synchronization

/// Loggers whose messages a test can read back.
public final class LogRecorder: Sendable {
    public struct Entry: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: Logger.Metadata
    }

    private let recorded = Mutex<[Entry]>([])

    public init() {}

    /// What the loggers were given, in order.
    public var entries: [Entry] { recorded.withLock { $0 } }

    /// A logger that records the messages from `level` on.
    public func logger(at level: Logger.Level) -> Logger {
        Logger(label: "test") { _ in Handler(recorder: self, logLevel: level) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let entry = Entry(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 })
            recorder.recorded.withLock { $0.append(entry) }
        }
    }
}
