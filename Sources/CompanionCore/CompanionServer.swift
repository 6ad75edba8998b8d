import AlarmKit
import Foundation
import HTTPTypes
import Hummingbird

/// The companion's HTTP routes: the page and its assets, sign-in, the live event stream and the
/// actions. Everything but the sockets: tests drive the router directly.
public struct CompanionServer: Sendable {
    public let hub: CompanionHub
    public let access: CompanionAccess
    public let control: any NodeControl
    /// How often the event stream repeats the state when nothing changes, so that a dropped
    /// connection is noticed and the page's clock correction stays fresh.
    static let heartbeat: Duration = .seconds(20)

    public init(hub: CompanionHub, access: CompanionAccess, control: any NodeControl) {
        self.hub = hub
        self.access = access
        self.control = control
    }

    /// The routes, for any request context (the server uses `BasicRequestContext`).
    public func router<Context: RequestContext>(context: Context.Type = BasicRequestContext.self) -> Router<Context> {
        let router = Router(context: Context.self)
        router.add(middleware: GuardMiddleware<Context>(access: access))
        router.get("/") { request, _ in
            guard let token = access.token(cookie: request.headers[.cookie], now: Date()) else { return Self.html(PageAssets.signInPage(error: nil)) }
            return Self.html(PageAssets.page(token: token, canSignOut: access.requiresPassword))
        }
        router.get("/companion.css") { _, _ in Self.response(PageAssets.style, type: "text/css; charset=utf-8", cache: "no-cache") }
        router.get("/companion.js") { _, _ in Self.response(PageAssets.script, type: "text/javascript; charset=utf-8", cache: "no-cache") }
        router.post("/login") { request, _ in try await signIn(request) }
        router.post("/logout") { request, _ in
            var response = Response.redirect(to: "/", type: .normal)
            response.headers[.setCookie] = access.signOut(cookie: request.headers[.cookie])
            return response
        }
        router.get("/api/state") { request, _ in
            await respond { () throws(CompanionError) in
                guard access.token(cookie: request.headers[.cookie], now: Date()) != nil else { throw .unauthenticated }
                return Self.json(CompanionSnapshot(nodes: hub.nodes.value, broker: hub.brokerProblem.value, now: Date()))
            }
        }
        router.get("/api/events") { request, _ in
            await respond { () throws(CompanionError) in
                guard let token = access.token(cookie: request.headers[.cookie], now: Date()) else { throw .unauthenticated }
                return events(token: token)
            }
        }
        router.post("/api/nodes/{node}/alarms/{alarm}/{action}") { request, context in
            await act(request) { () async throws(CompanionError) in
                let action = try CompanionRequests.alarmAction(
                    node: context.parameters.get("node") ?? "", alarm: context.parameters.get("alarm") ?? "",
                    action: context.parameters.get("action") ?? "", nodes: hub.nodes.value)
                try await control.perform(action.action.operation, node: action.node, id: action.alarmID)
            }
        }
        router.post("/api/groups/{group}/alarms/{alarm}/{action}") { request, context in
            await act(request) { () async throws(CompanionError) in
                let action = try CompanionRequests.groupAlarmAction(
                    group: context.parameters.get("group") ?? "", alarm: context.parameters.get("alarm") ?? "",
                    action: context.parameters.get("action") ?? "", nodes: hub.nodes.value)
                try await control.perform(action.action.operation, group: action.group, id: action.alarmID)
            }
        }
        router.post("/api/nodes/{node}/alarms") { request, context in
            await act(request) { () async throws(CompanionError) in
                var request = request
                let body = try await Self.body(of: &request)
                let text = try CompanionRequests.newAlarmText(
                    node: context.parameters.get("node") ?? "", body: body,
                    contentType: request.headers[.contentType], nodes: hub.nodes.value)
                try await control.schedule(text, node: context.parameters.get("node") ?? "")
            }
        }
        return router
    }

    // MARK: Sign-in

    private func signIn(_ request: Request) async throws -> Response {
        var request = request
        return await respond { () async throws(CompanionError) in
            try access.checkSameOrigin(host: Self.host(request), origin: request.headers[.origin],
                                       fetchSite: request.headers[Self.fetchSite])
            let body = try await Self.body(of: &request)
            let password = try CompanionRequests.formFields(body, contentType: request.headers[.contentType])["password"] ?? ""
            guard await access.awaitSignInTurn() else { throw .tooManySignIns }
            guard let cookie = access.signIn(password: password, now: Date()) else {
                return Self.html(PageAssets.signInPage(error: "That password is not the companion's. Try again."), status: .unauthorized)
            }
            var response = Response.redirect(to: "/", type: .normal)
            response.headers[.setCookie] = cookie
            return response
        }
    }

    /// The event stream: the page's token (a page left open while the companion restarted takes
    /// the new one as it reconnects), the state now, then on every change (and at each heartbeat).
    private func events(token: String) -> Response {
        let nodes = hub.nodes, brokerProblem = hub.brokerProblem
        let body = ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "event: token\ndata: \(token)\n\n"))
            let changes = nodes.stream(), brokerChanges = brokerProblem.stream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                group.addTask {
                    for await _ in changes { tick.yield() }
                    tick.finish()
                }
                // With no node known, a lost broker changes nothing else.
                group.addTask { for await _ in brokerChanges { tick.yield() } }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: Self.heartbeat)
                        tick.yield()
                    }
                }
                for await _ in ticks {
                    let snapshot = CompanionSnapshot(nodes: nodes.value, broker: brokerProblem.value, now: Date())
                    let data = (try? AlarmJSON.encoder.encode(snapshot)) ?? Data()
                    try await writer.write(ByteBuffer(string: "data: \(String(decoding: data, as: UTF8.self))\n\n"))
                }
                group.cancelAll()
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }

    // MARK: Checks

    /// An action: `{"ok":true}` once `body` did it, after the checks every action passes before
    /// its body is read (same origin, and the page's token).
    private func act(_ request: Request, _ body: () async throws(CompanionError) -> Void) async -> Response {
        await respond { () async throws(CompanionError) in
            try access.checkSameOrigin(host: Self.host(request), origin: request.headers[.origin], fetchSite: request.headers[Self.fetchSite])
            try access.checkToken(request.headers[Self.tokenField], cookie: request.headers[.cookie], now: Date())
            try await body()
            return Self.json(APIReply(ok: true, error: nil))
        }
    }

    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let tokenField = HTTPField.Name(CompanionAccess.tokenHeader)!

    static func host(_ request: Request) -> String? { request.head.authority ?? request.headers[HTTPField.Name("Host")!] }

    private static func body(of request: inout Request) async throws(CompanionError) -> Data {
        do {
            return Data(buffer: try await request.collectBody(upTo: CompanionRequests.maximumBodySize))
        } catch { throw .tooLarge }
    }

    // MARK: Responses

    private func respond(_ body: () async throws(CompanionError) -> Response) async -> Response {
        do { return try await body() } catch { return Self.failure(error) }
    }

    static func failure(_ error: CompanionError) -> Response {
        json(APIReply(ok: false, error: .init(code: error.code, message: error.message)), status: error.status)
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? AlarmJSON.encoder.encode(value)) ?? Data()
        return response(String(decoding: data, as: UTF8.self), type: "application/json; charset=utf-8", status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response { response(text, type: "text/html; charset=utf-8", status: status) }

    /// A response with `text` of `type`, `200 OK` unless `status` says otherwise; `cache` is its `Cache-Control`.
    static func response(_ text: String, type: String, cache: String = "no-store", status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: type, .cacheControl: cache], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// On every request: the host check (loopback names only without a password), and headers that
/// keep the page out of other sites' frames and away from any script but its own.
struct GuardMiddleware<Context: RequestContext>: RouterMiddleware {
    let access: CompanionAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            try access.checkHost(CompanionServer.host(request))
            response = try await next(request, context)
        } catch let error as CompanionError {
            response = CompanionServer.failure(error)
        } catch let error as HTTPError where error.status == .notFound {
            // The router's: no route for this path and method.
            response = CompanionServer.failure(CompanionError(code: "notFound", status: .notFound, message:
                "there is no \(request.method) \(request.uri.path) here: the page is at /, its API under /api/ (docs/companion.md)"))
        }
        response.headers[.contentSecurityPolicy] = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        // Not no-referrer, under which a browser sends the sign-in form's POST with `Origin: null`.
        response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return response
    }
}

/// An action's answer: `{"ok":true}`, or `{"ok":false,"error":{"code":…,"message":…}}`.
public struct APIReply: Codable, Sendable, Equatable {
    public struct Failure: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
    }

    public var ok: Bool
    public var error: Failure?
}
