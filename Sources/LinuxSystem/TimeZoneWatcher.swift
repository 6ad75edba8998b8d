import CLinux
import FoundationEssentials
import Glibc
import Logging

/// Where the system keeps its time zone. Tests point these at a temporary directory.
public struct TimeZoneFiles: Sendable, Hashable {
    /// The zone file the C library reads, usually a symlink into /usr/share/zoneinfo.
    public var localtime = "/etc/localtime"
    /// Debian's plain-text zone name, used when `localtime` is not a symlink into zoneinfo.
    public var timezone = "/etc/timezone"

    public static let system = TimeZoneFiles()
}

/// The system's time zone.
public enum SystemTimeZone {
    /// The zone's IANA identifier, read from `files`: `readlink(2)` on `localtime` (taking the
    /// name under `zoneinfo/`, without a `posix/` or `right/` prefix), else the `timezone` file,
    /// else `TimeZone.current`. A name Foundation does not know is skipped.
    public static func identifier(files: TimeZoneFiles = .system) -> String {
        if let identifier = zoneNameFromLink(at: files.localtime) { return identifier }
        if let contents = try? String(contentsOfFile: files.timezone, encoding: .utf8),
           let name = contents.split(whereSeparator: \.isWhitespace).first, TimeZone(identifier: String(name)) != nil {
            return String(name)
        }
        return TimeZone.current.identifier
    }

    private static func zoneNameFromLink(at path: String) -> String? {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX))
        let length = readlink(path, &target, target.count)
        guard length > 0 else { return nil }
        let link = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let marker = link.ranges(of: "zoneinfo/").last else { return nil }
        var identifier = String(link[marker.upperBound...])
        for variant in ["posix/", "right/"] where identifier.hasPrefix(variant) { identifier.removeFirst(variant.count) }
        return TimeZone(identifier: identifier) != nil ? identifier : nil
    }
}

/// Changes of the system time zone, as they happen: each element is the system zone's
/// identifier (``SystemTimeZone``) read right after one or more changes were noticed.
///
/// Each iterator owns an `inotify_init1(2)` instance with an `inotify_add_watch(2)` on the
/// directory of `files.localtime` (and of `files.timezone` if it lives elsewhere), for `IN_CREATE |
/// IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE` on those two names. Watching the directory, not the
/// file, is what sees a symlink being replaced or re-pointed (`ln -sf`, `timedatectl set-timezone`)
/// as well as a regular file rewritten in place. All events read together make one element; a
/// replacement done as delete-then-create may arrive as two, the last of which carries the new
/// zone. A kernel queue overflow is reported as a change, to be safe.
///
/// The watch is added by `makeAsyncIterator()`: a change after that returns is reported.
/// Waiting happens on a dedicated thread in `poll(2)`, never on Swift's cooperative pool;
/// cancelling the iterating task ends the sequence and the thread at once. The sequence
/// fails with a ``SystemError`` if a watched directory cannot be watched or disappears.
public struct TimeZoneWatcher: AsyncSequence, Sendable {
    private let files: TimeZoneFiles
    private let logger: Logger

    public init(files: TimeZoneFiles = .system, logger: Logger) {
        self.files = files
        self.logger = logger
    }

    public func makeAsyncIterator() -> KernelEventIterator<String> {
        KernelEventIterator { [files, logger] () throws(SystemError) in try TimeZoneFileWatch(files: files, logger: logger) }
    }
}

/// The inotify instance behind ``TimeZoneWatcher``.
struct TimeZoneFileWatch: ReadinessSource {
    static let threadName = "alarmd-tzwatch"
    static let waitingAction = "waiting for time-zone changes on inotify"

    private static let fileEvents = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE)
    private static let directoryGoneEvents = UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)
    /// The fixed part of `struct inotify_event`: wd, mask, cookie, len.
    private static let eventHeaderSize = 16

    let descriptor: OwnedDescriptor
    private let files: TimeZoneFiles
    private let logger: Logger
    /// For each watch descriptor, its directory and the file names that matter in it.
    private let watchedNames: [Int32: (directory: String, names: Set<String>)]

    init(files: TimeZoneFiles, logger: Logger) throws(SystemError) {
        self.files = files
        self.logger = logger
        let inotify = OwnedDescriptor(try systemCall("creating an inotify instance to watch the time zone") {
            inotify_init1(CLINUX_IN_CLOEXEC | CLINUX_IN_NONBLOCK)
        })
        descriptor = inotify
        let urls = [files.localtime, files.timezone].map { URL(fileURLWithPath: $0) }
        var watchedNames: [Int32: (directory: String, names: Set<String>)] = [:]
        for (directory, named) in Dictionary(grouping: urls, by: { $0.deletingLastPathComponent().path }) {
            let watch = try systemCall("watching \(directory) for time-zone changes with inotify", subject: directory) {
                inotify_add_watch(inotify.raw, directory, Self.fileEvents | UInt32(IN_ONLYDIR))
            }
            watchedNames[watch] = (directory, Set(named.map(\.lastPathComponent)))
        }
        self.watchedNames = watchedNames
    }

    mutating func readEvent() throws(SystemError) -> String? {
        var changed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let length: Int
            do {
                length = try systemCall("reading inotify events for the time zone") { read(descriptor.raw, &buffer, buffer.count) }
            } catch let error where error.code == EAGAIN { break }
            var offset = 0
            while offset + Self.eventHeaderSize <= length {
                let watch = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let nameLength = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                let nameBytes = buffer[(offset + Self.eventHeaderSize)..<(offset + Self.eventHeaderSize + nameLength)]
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                offset += Self.eventHeaderSize + nameLength

                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    logger.warning("Time-zone inotify queue overflowed; treating it as a change")
                    changed = true
                } else if mask & Self.directoryGoneEvents != 0 {
                    let directory = watchedNames[watch]?.directory ?? "the watched directory"
                    throw SystemError(code: ENOENT, action: "watching \(directory) for time-zone changes",
                                      remedy: "the directory was removed or moved: restore it and restart the daemon")
                } else if watchedNames[watch]?.names.contains(name) == true {
                    changed = true
                }
            }
        }
        return changed ? SystemTimeZone.identifier(files: files) : nil
    }
}
