import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// Drives a router as the server would, without sockets: a request in, the whole response out.
/// (HummingbirdTesting does the same, but brings AsyncHTTPClient and BoringSSL into the build.)
struct RouterClient {
    struct TestResponse {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer
    }

    /// A request context made without a channel.
    struct Context: RequestContext {
        struct Source: RequestContextSource {
            let logger = Logger(label: "companion-tests")
        }

        var coreContext: CoreRequestContextStorage

        init(source: Source) {
            coreContext = CoreRequestContextStorage(source: source)
        }
    }

    /// Collects what a response body writes.
    private final class Collector: ResponseBodyWriter, Sendable {
        let buffer = Mutex(ByteBuffer())

        func write(_ part: ByteBuffer) async throws {
            buffer.withLock { _ = $0.writeImmutableBuffer(part) }
        }

        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    let responder: RouterResponder<Context>

    init(_ router: Router<Context>) {
        responder = router.buildResponder()
    }

    @discardableResult
    func execute<Value>(
        uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
        _ check: (TestResponse) async throws -> Value = { $0 }
    ) async throws -> Value {
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: uri, headerFields: headers),
            body: RequestBody(buffer: body ?? ByteBuffer()))
        let response = try await responder.respond(to: request, context: Context(source: Context.Source()))
        let collector = Collector()
        try await response.body.write(collector)
        return try await check(TestResponse(status: response.status, headers: response.headers, body: collector.buffer.withLock { $0 }))
    }
}

extension RouterClient {
    /// Runs `body` with this client (the shape of HummingbirdTesting's `test`).
    func run(_ body: (RouterClient) async throws -> Void) async throws {
        try await body(self)
    }
}
