import Foundation
import Glibc
import MosquittoTestSupport
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
