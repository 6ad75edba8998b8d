import Glibc

/// The process's standard output or standard error, written to without buffering.
public enum StandardStream: Sendable {
    case output, error

    /// Writes `text` whole with `write(2)`, retrying after a signal or a partial write. A
    /// stream that cannot take it (closed, or a full disk behind a redirect) loses the rest.
    /// - Returns: the `errno` of the write that failed (`EIO` when it wrote nothing); nil when
    ///   all was written. The daemon ignores it: nothing here is worth stopping it for.
    @discardableResult
    public func write(_ text: String) -> Int32? {
        let descriptor = self == .output ? STDOUT_FILENO : STDERR_FILENO
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return written < 0 ? errno : EIO
            }
        }
        return nil
    }
}
