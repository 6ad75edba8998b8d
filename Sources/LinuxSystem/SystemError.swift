import CLinux
import Glibc

/// A failed Linux system call, as one error type for everything in LinuxSystem.
///
/// `code` is the `errno` value the kernel or C library reported (`codeName` spells it, e.g.
/// `ENOSPC`), and `message` says what was being done, why it failed, and what an operator can do
/// about it, e.g. "writing state to /var/lib/alarmd/state.json failed: No space left on device; the
/// disk is full: free space on the file system holding /var/lib/alarmd".
///
/// Every `SystemError` is made by ``systemCall(_:subject:remedy:retryingOnInterrupt:_:)``
/// or by `init(code:action:subject:remedy:)`, which that function calls.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `errno` value, e.g. 28.
    public let code: Int32
    /// What failed and what to do about it.
    public let message: String

    /// The symbolic name of `code` (`"ENOSPC"`), or `"errno <n>"` when glibc has none.
    public var codeName: String { clinux_errno_name(code).map { String(cString: $0) } ?? "errno \(code)" }

    public var description: String { "\(message) [\(codeName) (\(code))]" }

    /// - Parameters:
    ///   - code: the `errno` value.
    ///   - action: what was being done, as a gerund phrase ("writing state to /x").
    ///   - subject: the file or directory whose condition the advice is about.
    ///   - remedy: advice that replaces the generic advice for `code`.
    init(code: Int32, action: String, subject: String? = nil, remedy: String? = nil) {
        let place = subject ?? "the file"
        let generic = switch code {
        case ENOSPC: "the disk is full: free space on the file system holding \(place)"
        case EDQUOT: "the disk quota is used up: free space or raise the quota for \(place)"
        case EROFS: "the file system holding \(place) is read-only: remount it read-write or configure a writable directory"
        case EACCES, EPERM: "give the daemon's user access to \(place), or the capability this needs"
        case ENOENT: "\(place) does not exist: create it or correct the configured path"
        case ENOTDIR: "a component of \(place) is not a directory: correct the configured path"
        case EISDIR: "\(place) is a directory: give the path of a file in it"
        case EIO: "the device reported an I/O error: check the storage and the kernel log (dmesg)"
        case EMFILE, ENFILE: "too many open files: raise the limit (LimitNOFILE= in the unit) or look for a descriptor leak"
        case ENOMEM: "the system is out of memory: free memory or reduce other load"
        default: "this is unexpected: report it with the error code"
        }
        self.code = code
        self.message = "\(action) failed: \(String(cString: strerror(code))); \(remedy ?? generic)"
    }
}

/// The one funnel from C-style calls to ``SystemError``: runs `call`, and when it returns -1
/// reads `errno` and throws. A call interrupted by a signal (`EINTR`) is run again unless
/// `retryingOnInterrupt` is false, which `close(2)` needs (Linux releases the descriptor even
/// when close reports `EINTR`, so a retry could close someone else's descriptor).
@discardableResult
func systemCall<Value: BinaryInteger>(
    _ action: @autoclosure () -> String,
    subject: @autoclosure () -> String? = nil,
    remedy: @autoclosure () -> String? = nil,
    retryingOnInterrupt: Bool = true,
    _ call: () -> Value
) throws(SystemError) -> Value {
    while true {
        let result = call()
        guard result == -1 else { return result }
        let code = errno
        if code == EINTR && retryingOnInterrupt { continue }
        throw SystemError(code: code, action: action(), subject: subject(), remedy: remedy())
    }
}

/// A descriptor for a kernel object that LinuxSystem only reads (timerfd, inotify, eventfd),
/// closed when the last reference goes away. Sendable without `@unchecked`: its only state is
/// an immutable integer.
final class OwnedDescriptor: Sendable {
    let raw: Int32

    init(_ raw: Int32) { self.raw = raw }

    deinit {
        // Nothing was written through this descriptor, so close(2) has nothing to report.
        _ = close(raw)
    }
}
