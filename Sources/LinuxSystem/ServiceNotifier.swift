import FoundationEssentials
import Glibc

/// systemd's service notification protocol (`sd_notify`) without libsystemd.
///
/// Each message is one datagram of newline-separated `KEY=value` assignments, sent with
/// `socket(AF_UNIX, SOCK_DGRAM)` and `sendto(2)` to the socket named by `$NOTIFY_SOCKET`: a
/// file system path, or an abstract socket written with a leading `@`. When `$NOTIFY_SOCKET`
/// is unset (not started by systemd, or `Type=` is not `notify`), sending does nothing.
public struct ServiceNotifier: Sendable {
    /// `$NOTIFY_SOCKET`, or nil when notifications are off.
    public let socketAddress: String?
    private let watchdogMicroseconds: String?
    private let watchdogProcessID: String?

    /// - Parameter environment: the process environment; tests pass their own.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketAddress = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        watchdogMicroseconds = environment["WATCHDOG_USEC"]
        watchdogProcessID = environment["WATCHDOG_PID"]
    }

    /// True when `$NOTIFY_SOCKET` is set.
    public var isEnabled: Bool { socketAddress != nil }

    /// The watchdog timeout systemd enforces (`WatchdogSec=`, passed as `$WATCHDOG_USEC`):
    /// send ``watchdog()`` at least every half of it. Nil when the watchdog is off, when the
    /// value is not a positive integer, or when `$WATCHDOG_PID` names another process.
    public func watchdogTimeout() -> Duration? {
        guard let text = watchdogMicroseconds, let microseconds = UInt64(text), microseconds > 0,
              watchdogProcessID.map({ pid_t($0) == getpid() }) ?? true else { return nil }
        return .microseconds(microseconds)
    }

    /// `READY=1`: start-up finished; systemd then considers the service started.
    @discardableResult
    public func ready() throws(SystemError) -> Bool { try send("READY=1") }

    /// `STOPPING=1`: shutdown began.
    @discardableResult
    public func stopping() throws(SystemError) -> Bool { try send("STOPPING=1") }

    /// `WATCHDOG=1`: the service is alive; resets the watchdog timer.
    @discardableResult
    public func watchdog() throws(SystemError) -> Bool { try send("WATCHDOG=1") }

    /// Sends `message` (newline-separated assignments) as one datagram.
    /// - Returns: false when `$NOTIFY_SOCKET` is unset and nothing was sent.
    @discardableResult
    public func send(_ message: String) throws(SystemError) -> Bool {
        guard let socketAddress else { return false }
        var address = try Self.unixAddress(socketAddress)
        let socketDescriptor = try systemCall("creating a socket to notify systemd") {
            socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        defer { _ = close(socketDescriptor) }
        let payload = Array(message.utf8)
        let sent = try systemCall(
            "notifying systemd through \(socketAddress)",
            remedy: "check that systemd (or the test) still listens on NOTIFY_SOCKET"
        ) {
            withUnsafePointer(to: &address.storage) { storage in
                storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddressPointer in
                    sendto(socketDescriptor, payload, payload.count, Int32(MSG_NOSIGNAL), socketAddressPointer, address.length)
                }
            }
        }
        guard sent == payload.count else {
            throw SystemError(code: EMSGSIZE, action: "notifying systemd through \(socketAddress)", remedy: "only \(sent) of \(payload.count) bytes were sent: shorten the message")
        }
        return true
    }

    /// The address of a Unix socket: a file system path, or an abstract name written with a leading `@`.
    static func unixAddress(_ text: String) throws(SystemError) -> (storage: sockaddr_un, length: socklen_t) {
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        var path = Array(text.utf8)
        let isAbstract = path.first == UInt8(ascii: "@")
        guard isAbstract || path.first == UInt8(ascii: "/") else {
            throw SystemError(code: EAFNOSUPPORT, action: "reading NOTIFY_SOCKET=\(text)", remedy: "only a path or an '@' abstract socket name is supported")
        }
        if isAbstract { path[0] = 0 } else { path.append(0) }
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        guard path.count <= capacity else {
            throw SystemError(code: ENAMETOOLONG, action: "reading NOTIFY_SOCKET=\(text)", remedy: "a socket path has at most \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: path) }
        return (storage, socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count))
    }
}
