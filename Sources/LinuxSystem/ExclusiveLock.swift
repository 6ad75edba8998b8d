import Glibc

/// An exclusive advisory lock on a file (`flock(2)` with `LOCK_EX | LOCK_NB`), held until this
/// value is released; the kernel also drops it when the process dies, however it dies.
public final class ExclusiveLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock on `path`, creating the file if needed (`open(2)` with `O_CREAT`, readable
    /// and writable by its owner only); on a read-only file system, the file there is opened to read.
    /// - Throws: ``SystemError`` with code `EWOULDBLOCK` when another process holds it.
    public init(path: String) throws(SystemError) {
        descriptor = try systemCall("opening the lock file \(path)", subject: path) {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            return descriptor == -1 && errno == EROFS ? open(path, O_RDONLY | O_CLOEXEC) : descriptor
        }
        // On failure, deinit closes the descriptor: the value is whole once it is set.
        try systemCall("locking \(path)", subject: path, remedy: "another process holds it: stop that one first") {
            flock(descriptor, LOCK_EX | LOCK_NB)
        }
    }

    deinit { _ = close(descriptor) }
}
