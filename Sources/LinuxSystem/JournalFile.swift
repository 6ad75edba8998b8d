import Glibc

/// A file that grows by appends, each durable before it returns: a journal of changes kept beside
/// a snapshot written with ``AtomicFile``.
///
/// The file is kept longer than what was appended, by zeros written ahead in chunks of
/// ``preallocationChunk``: an append then rewrites blocks the file already has, and its
/// `fdatasync(2)` flushes those alone, without the inode that a growing file's new size dirties
/// (one write to the disk fewer per append, and on an SD card one small write fewer in another
/// place). Once in a chunk an append extends the file again.
///
/// So the file reads as the appended bytes followed by zeros. A crash in the middle of an append
/// leaves its bytes partly written; whoever reads the journal must recognise an incomplete last
/// entry (for example one that lacks its terminating newline, or holds a zero byte) and ignore
/// it: an append that did not return was never durable. Used by one thread at a time.
public final class JournalFile {
    public let path: String
    /// The bytes appended so far, the header included: where the next append goes.
    public private(set) var size: Int
    /// The file's length: `size`, then zeros.
    private var length: Int
    private let descriptor: Int32
    private let directory: String

    /// How far ahead of the appends the file is extended with zeros: 64 KiB.
    public static let preallocationChunk = 64 * 1024
    private static let zeros = [UInt8](repeating: 0, count: preallocationChunk)

    /// Empties the file at `path` (creating it if needed) and writes `header` as its first
    /// bytes, followed by zeros, durably: `open(2)` with `O_TRUNC`, `pwrite(2)`, `fdatasync(2)`,
    /// then `fsync(2)` of the directory so that a newly created file's name is on disk too.
    /// - Parameter permissions: mode of a newly created file, before the umask.
    public init(resetting path: String, header: [UInt8], permissions: mode_t = 0o600) throws(SystemError) {
        let location = try FileLocation(path)
        let descriptor = try systemCall("creating the journal \(path)", subject: location.directory) {
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions)
        }
        self.path = path
        self.descriptor = descriptor
        self.directory = location.directory
        self.size = 0
        self.length = 0
        try append(header)
        try AtomicFile.syncDirectory(location.directory)
    }

    deinit {
        _ = close(descriptor)
    }

    /// Writes `bytes` after the last append and makes them durable (`pwrite(2)`, `fdatasync(2)`),
    /// first extending the file with zeros when they would not fit in it (so a full disk fails
    /// the append before any of its bytes are written). After a failure the file may hold part
    /// of `bytes`: reset it before appending again.
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        let end = size + bytes.count
        while length <= end {
            try AtomicFile.writeAll(Self.zeros, to: descriptor, at: length, action: "extending \(path) with zeros", directory: directory)
            length += Self.preallocationChunk
        }
        try AtomicFile.writeAll(bytes, to: descriptor, at: size, action: "appending to \(path)", directory: directory)
        size = end
        try systemCall("flushing \(path) to disk (fdatasync)", subject: directory) { fdatasync(descriptor) }
    }
}
