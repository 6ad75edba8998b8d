import Glibc

/// A file that grows by appends, each durable before it returns: a journal of changes kept beside
/// a snapshot written with ``AtomicFile``.
///
/// A crash in the middle of an append leaves its bytes partly written at the end of the file;
/// whoever reads the journal must recognise an incomplete last entry (for example one that lacks
/// its terminating newline) and ignore it: an append that did not return was never durable.
/// Used by one thread at a time.
public final class JournalFile {
    public let path: String
    /// The file's size in bytes: the header and every append so far.
    public private(set) var size: Int
    private let descriptor: Int32
    private let directory: String

    /// Empties the file at `path` (creating it if needed) and writes `header` as its first
    /// bytes, durably: `open(2)` with `O_TRUNC`, `write(2)`, `fdatasync(2)`, then `fsync(2)` of
    /// the directory so that a newly created file's name is on disk too.
    /// - Parameter permissions: mode of a newly created file, before the umask.
    public init(resetting path: String, header: [UInt8], permissions: mode_t = 0o600) throws(SystemError) {
        let location = try FileLocation(path)
        let descriptor = try systemCall("creating the journal \(path)", subject: location.directory) {
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, permissions)
        }
        self.path = path
        self.descriptor = descriptor
        self.directory = location.directory
        self.size = 0
        try append(header)
        try AtomicFile.syncDirectory(location.directory)
    }

    deinit {
        _ = close(descriptor)
    }

    /// Writes `bytes` at the end of the file and makes them durable (`write(2)`, `fdatasync(2)`).
    /// After a failure the file may end in part of `bytes`: reset it before appending again.
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        try AtomicFile.writeAll(bytes, to: descriptor, action: "appending to \(path)", directory: directory)
        size += bytes.count
        try systemCall("flushing \(path) to disk (fdatasync)", subject: directory) { fdatasync(descriptor) }
    }
}
