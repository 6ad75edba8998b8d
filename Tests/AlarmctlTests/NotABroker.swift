import Foundation
import MosquittoTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that is no MQTT broker, for what alarmctl says about such an
/// address: with an `answer`, it reads what a client sends, writes the answer (an HTTP server's
/// error, say) and closes the connection; without, it never accepts, so the kernel completes the
/// TCP handshake and the MQTT CONNECT is never answered. ``close()`` when done.
final class NotABroker: Sendable {
    let port: Int
    private let listeningSocket: Int32

    init(answer: [UInt8]?) throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw TestSupportError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0 && listen(socketFD, 16) == 0
            }
        }
        guard listening else {
            let reason = String(cString: strerror(errno))
            Glibc.close(socketFD)
            throw TestSupportError("could not listen on 127.0.0.1: \(reason)")
        }
        listeningSocket = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
        guard let answer else { return }
        // accept(2) blocks: a thread of its own answers each connection until close() shuts the socket down.
        let answering = Thread {
            while true {
                let connection = accept(socketFD, nil, nil)
                guard connection >= 0 else {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(connection, &request, request.count)
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                Glibc.close(connection)
            }
        }
        answering.name = "not-a-broker"
        answering.start()
    }

    /// Stops listening; connections already accepted have been closed.
    func close() {
        shutdown(listeningSocket, Int32(SHUT_RDWR))
    }

    deinit {
        shutdown(listeningSocket, Int32(SHUT_RDWR))
        Glibc.close(listeningSocket)
    }
}
