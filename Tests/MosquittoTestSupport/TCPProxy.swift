import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 between MQTT clients and a ``TestBroker``, to break connections on purpose:
/// - ``cutConnections()`` closes relayed connections without any MQTT DISCONNECT, so the broker treats
///   the client as gone (and publishes its will) and the client sees a lost connection;
/// - ``acceptsConnections`` false closes new connections at once, so the broker looks unreachable;
/// - `rejectingMQTT5` answers an MQTT 5 CONNECT the way an MQTT 3.1.1-only broker does
///   (CONNACK 0x20 0x02 0x00 0x01, "unacceptable protocol version") and relays everything else;
/// - `droppingMQTT5` closes the connection on an MQTT 5 CONNECT without answering, as RabbitMQ's
///   MQTT plugin before 3.13 does, and relays everything else.
public final class TCPProxy: Sendable {
    public let port: Int
    private let upstreamPort: Int
    private let rejectingMQTT5: Bool
    private let droppingMQTT5: Bool
    private let listeningSocket: Int32
    private let state: Mutex<State> = Mutex(State())

    private struct State {
        var acceptsConnections = true
        var isClosed = false
        /// Sockets of live relayed connections (both ends).
        var relaySockets: Set<Int32> = []
    }

    public init(upstreamPort: Int, rejectingMQTT5: Bool = false, droppingMQTT5: Bool = false) throws {
        self.upstreamPort = upstreamPort
        self.rejectingMQTT5 = rejectingMQTT5
        self.droppingMQTT5 = droppingMQTT5
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw TestSupportError("proxy socket() failed: \(String(cString: strerror(errno)))") }
        var reuse: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = TestBroker.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(socketFD, $0, &length)
            }
        }
        guard bound == 0, named == 0, listen(socketFD, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(socketFD)
            throw TestSupportError("proxy could not listen on 127.0.0.1: \(reason)")
        }
        self.listeningSocket = socketFD
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let acceptThread = Thread { [self] in acceptLoop() }
        acceptThread.name = "test-proxy-accept"
        acceptThread.start()
    }

    deinit {
        Glibc.close(listeningSocket)
    }

    /// While false, new connections are accepted and closed at once.
    public var acceptsConnections: Bool {
        get { state.withLock { $0.acceptsConnections } }
        set { state.withLock { $0.acceptsConnections = newValue } }
    }

    /// Ends every relayed connection abruptly (no MQTT DISCONNECT on either side).
    public func cutConnections() {
        // Under the lock: a relay closes its sockets under it too, so no descriptor here can have
        // been closed and reused by someone else (such as a client in this process).
        state.withLock { state in
            for socketFD in state.relaySockets {
                shutdown(socketFD, Int32(SHUT_RDWR))
            }
        }
    }

    /// Stops listening and cuts every connection. Call it when done: the accept thread keeps the proxy alive until then.
    public func close() {
        state.withLock { $0.isClosed = true }
        shutdown(listeningSocket, Int32(SHUT_RDWR))
        cutConnections()
    }

    private func acceptLoop() {
        while true {
            let clientSocket = accept(listeningSocket, nil, nil)
            let (closed, accepting) = state.withLock { ($0.isClosed, $0.acceptsConnections) }
            if closed {
                if clientSocket >= 0 { Glibc.close(clientSocket) }
                return
            }
            guard clientSocket >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard accepting else {
                Glibc.close(clientSocket)
                continue
            }
            let relayThread = Thread { [self] in relay(from: clientSocket) }
            relayThread.name = "test-proxy-relay"
            relayThread.start()
        }
    }

    /// Handles one client: optionally refuses MQTT 5, then pumps bytes both ways until either side ends.
    private func relay(from clientSocket: Int32) {
        var connectBytes: [UInt8] = []
        if rejectingMQTT5 || droppingMQTT5 {
            guard let connect = readConnectHeader(clientSocket) else {
                Glibc.close(clientSocket)
                return
            }
            if connect.protocolLevel == 5, droppingMQTT5 {
                Glibc.close(clientSocket)
                return
            }
            if connect.protocolLevel == 5 {
                let refusal: [UInt8] = [0x20, 0x02, 0x00, 0x01]
                _ = refusal.withUnsafeBytes { write(clientSocket, $0.baseAddress, $0.count) }
                Glibc.close(clientSocket)
                return
            }
            connectBytes = connect.bytes
        }
        let upstreamSocket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = TestBroker.loopbackAddress(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(upstreamSocket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard upstreamSocket >= 0, connected == 0, Self.writeAll(connectBytes, to: upstreamSocket) else {
            if upstreamSocket >= 0 { Glibc.close(upstreamSocket) }
            Glibc.close(clientSocket)
            return
        }
        state.withLock { $0.relaySockets.formUnion([clientSocket, upstreamSocket]) }
        let pumpsLeft = Mutex(2)
        let finishPump: @Sendable () -> Void = { [self] in
            shutdown(clientSocket, Int32(SHUT_RDWR))
            shutdown(upstreamSocket, Int32(SHUT_RDWR))
            let last = pumpsLeft.withLock { count in
                count -= 1
                return count == 0
            }
            if last {
                state.withLock { state in
                    state.relaySockets.subtract([clientSocket, upstreamSocket])
                    Glibc.close(clientSocket)
                    Glibc.close(upstreamSocket)
                }
            }
        }
        let upstreamPump = Thread {
            Self.pump(from: clientSocket, to: upstreamSocket)
            finishPump()
        }
        upstreamPump.name = "test-proxy-pump"
        upstreamPump.start()
        Self.pump(from: upstreamSocket, to: clientSocket)
        finishPump()
    }

    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0, writeAll(Array(buffer[..<count]), to: destination) else { return }
        }
    }

    private static func writeAll(_ bytes: [UInt8], to socketFD: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads the start of a CONNECT packet up to its protocol level byte: fixed header, remaining
    /// length (1–4 bytes), protocol name (2-byte length + "MQTT"), level.
    private func readConnectHeader(_ socketFD: Int32) -> (bytes: [UInt8], protocolLevel: UInt8)? {
        var bytes: [UInt8] = []
        func readByte() -> UInt8? {
            var byte: UInt8 = 0
            while true {
                let count = read(socketFD, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return nil }
                bytes.append(byte)
                return byte
            }
        }
        guard readByte() == 0x10 else { return nil }
        for _ in 0..<4 {
            guard let lengthByte = readByte() else { return nil }
            if lengthByte & 0x80 == 0 { break }
        }
        guard let nameLengthHigh = readByte(), let nameLengthLow = readByte() else { return nil }
        let nameLength = Int(nameLengthHigh) << 8 | Int(nameLengthLow)
        for _ in 0..<nameLength {
            guard readByte() != nil else { return nil }
        }
        guard let level = readByte() else { return nil }
        return (bytes, level)
    }
}
