import Foundation
import Glibc
import Testing
@testable import LinuxSystem

@Suite("ServiceNotifier")
struct ServiceNotifierTests {
    @Test func withoutNotifySocketNothingIsSent() throws {
        let notifier = ServiceNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(try notifier.ready() == false)
    }

    @Test func messagesArriveAsDatagramsOnAPathSocket() throws {
        let directory = try TemporaryDirectory()
        let listener = try DatagramListener(address: directory.file("notify"))
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": directory.file("notify")])

        #expect(try notifier.ready())
        try notifier.watchdog()
        try notifier.stopping()

        #expect(try listener.receive(within: .seconds(2)) == "READY=1")
        #expect(try listener.receive(within: .seconds(2)) == "WATCHDOG=1")
        #expect(try listener.receive(within: .seconds(2)) == "STOPPING=1")
    }

    @Test func messagesArriveOnAnAbstractSocket() throws {
        let name = "@alarmd-linux-test-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let listener = try DatagramListener(address: name)
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": name])

        try notifier.send("READY=1\nSTATUS=up")

        #expect(try listener.receive(within: .seconds(2)) == "READY=1\nSTATUS=up")
    }

    @Test func aSocketThatDoesNotExistFailsWithENOENT() throws {
        let directory = try TemporaryDirectory()
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": directory.file("gone")])
        let error = #expect(throws: SystemError.self) { try notifier.ready() }
        #expect(error?.codeName == "ENOENT")
    }

    @Test func anUnsupportedAddressIsRejected() throws {
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": "vsock:2:1234"])
        let error = #expect(throws: SystemError.self) { try notifier.ready() }
        #expect(error?.codeName == "EAFNOSUPPORT")
    }

    @Test func watchdogTimeoutComesFromWatchdogUsecForThisProcessOnly() {
        let me = getpid()
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "30000000"]).watchdogTimeout() == .seconds(30))
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "500", "WATCHDOG_PID": "\(me)"]).watchdogTimeout() == .microseconds(500))
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "500", "WATCHDOG_PID": "\(me + 1)"]).watchdogTimeout() == nil)
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "500", "WATCHDOG_PID": "x"]).watchdogTimeout() == nil)
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "0"]).watchdogTimeout() == nil)
        #expect(ServiceNotifier(environment: ["WATCHDOG_USEC": "soon"]).watchdogTimeout() == nil)
        #expect(ServiceNotifier(environment: [:]).watchdogTimeout() == nil)
    }
}

/// An AF_UNIX datagram socket the test binds, standing in for systemd.
final class DatagramListener {
    private let descriptor: Int32

    /// - Parameter address: a path, or a name starting with "@" for the abstract namespace.
    init(address: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 } else { bytes.append(0) }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    /// The next datagram, waiting for it with poll(2) at most `limit`.
    func receive(within limit: Duration) throws -> String {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(limit.components.seconds * 1000)
        guard poll(&waiting, 1, milliseconds) == 1 else { throw DeadlineExceeded(waitingFor: "a notification datagram") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    deinit {
        close(descriptor)
    }
}
