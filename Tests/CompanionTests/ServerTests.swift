import AlarmKit
import CompanionCore
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// The routes, driven without sockets: what reaches the node control and what the page gets back.
@Suite struct ServerTests {
    let hub = CompanionHub()

    init() throws {
        hub.update(node: "kitchen", status: NodeStatus(state: "online", timeZone: "Europe/Berlin"))
        hub.update(node: "kitchen", documents: [try Fixtures.runningTimer()])
    }

    func application(password: String? = nil, control: RecordingControl) -> RouterClient {
        RouterClient(CompanionServer(hub: hub, access: CompanionAccess(password: password, signInInterval: .zero), control: control).router(context: RouterClient.Context.self))
    }

    /// The page's token, read from its HTML as the script reads it.
    func token(in html: String) throws -> String {
        let marker = #"name="companion-token" content=""#
        let start = try #require(html.range(of: marker)).upperBound
        return String(html[start...].prefix { $0 != "\"" })
    }

    @Test func thePageCarriesItsTokenAndStrictHeaders() async throws {
        try await application(control: RecordingControl()).run { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                #expect(response.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
                #expect(response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                let token = try token(in: String(buffer: response.body))
                #expect(token.count == 64)
                #expect(response.headers[.accessControlAllowOrigin] == nil)
            }
            try await client.execute(uri: "/companion.js", method: .get) { response in
                #expect(response.headers[.contentType] == "text/javascript; charset=utf-8")
                #expect(String(buffer: response.body).contains("EventSource"))
            }
        }
    }

    @Test func noSuchRouteIsAJSONRefusalWithTheStrictHeaders() async throws {
        try await application(control: RecordingControl()).run { client in
            for (uri, method) in [("/nothing", HTTPRequest.Method.get), ("/api/state", .post)] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status == .notFound)
                    #expect(String(buffer: response.body).hasPrefix(#"{"error":{"code":"notFound","message":"there is no \#(method) \#(uri) here"#))
                    #expect(response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                }
            }
        }
    }

    @Test func anActionWithTheTokenReachesTheNode() async throws {
        let control = RecordingControl()
        try await application(control: control).run { client in
            let page = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let headers: HTTPFields = [HTTPField.Name("X-Companion-Token")!: try token(in: page), .origin: "http://localhost"]
            try await client.execute(uri: "/api/nodes/kitchen/alarms/\(Fixtures.timerID.uuidString)/pause", method: .post, headers: headers) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"ok":true}"#)
            }
        }
        #expect(control.recorded == [.init(operation: "pause", node: "kitchen", target: Fixtures.timerID.uuidString)])
    }

    @Test func aCrossSitePostIsRefusedAndChangesNothing() async throws {
        let control = RecordingControl()
        try await application(control: control).run { client in
            let page = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let token = try token(in: page)
            let uri = "/api/nodes/kitchen/alarms/\(Fixtures.timerID.uuidString)/cancel"
            // A form on another site: no token, its own origin.
            try await client.execute(uri: uri, method: .post, headers: [.origin: "http://evil.example", .contentType: "application/x-www-form-urlencoded"]) {
                #expect($0.status == .forbidden)
            }
            // Even with a token somehow known, another origin is refused.
            try await client.execute(uri: uri, method: .post, headers: [.origin: "http://evil.example", HTTPField.Name("X-Companion-Token")!: token]) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: uri, method: .post, headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site", HTTPField.Name("X-Companion-Token")!: token]) {
                #expect($0.status == .forbidden)
            }
            // Same origin, no token.
            try await client.execute(uri: uri, method: .post, headers: [.origin: "http://localhost"]) { response in
                #expect(response.status == .forbidden)
                #expect(String(buffer: response.body).contains("X-Companion-Token"))
            }
        }
        #expect(control.recorded.isEmpty)
    }

    @Test func badRequestsGetClearErrorsAndChangeNothing() async throws {
        let control = RecordingControl()
        try await application(control: control).run { client in
            let page = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let headers: HTTPFields = [HTTPField.Name("X-Companion-Token")!: try token(in: page), .contentType: "application/json"]
            let cases: [(String, HTTPResponse.Status, String)] = [
                ("/api/nodes/garage/alarms/\(Fixtures.timerID.uuidString)/stop", .notFound, "unknownNode"),
                ("/api/nodes/kitchen/alarms/\(Fixtures.alarmID.uuidString)/stop", .notFound, "unknownAlarm"),
                ("/api/nodes/kitchen/alarms/nope/stop", .badRequest, "badRequest"),
                ("/api/nodes/kitchen/alarms/\(Fixtures.timerID.uuidString)/explode", .badRequest, "badRequest"),
            ]
            for (uri, status, code) in cases {
                try await client.execute(uri: uri, method: .post, headers: headers) { response in
                    #expect(response.status == status, "\(uri)")
                    let reply = try JSONDecoder().decode(APIReply.self, from: Data(buffer: response.body))
                    #expect(reply.error?.code == code, "\(uri)")
                    #expect(reply.error?.message.isEmpty == false)
                }
            }
            let oversized = ByteBuffer(string: #"{"text":""# + String(repeating: "x", count: 10_000) + #""}"#)
            try await client.execute(uri: "/api/nodes/kitchen/alarms", method: .post, headers: headers, body: oversized) { response in
                #expect(response.status == .contentTooLarge)
            }
            try await client.execute(uri: "/api/nodes/kitchen/alarms", method: .post, headers: headers, body: ByteBuffer(string: "{")) {
                #expect($0.status == .badRequest)
            }
        }
        #expect(control.recorded.isEmpty)
    }

    @Test func aNewAlarmsTextGoesToTheNodeAndItsRefusalComesBackInItsWords() async throws {
        let refusal = CompanionError(node: NodeFailure(code: .invalidConfiguration, message: "the title is longer than 128 bytes: shorten it",
                                                       field: "configuration.attributes.presentation.alert.title"))
        let control = RecordingControl(failure: refusal)
        try await application(control: control).run { client in
            let page = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let headers: HTTPFields = [HTTPField.Name("X-Companion-Token")!: try token(in: page), .contentType: "application/json"]
            try await client.execute(uri: "/api/nodes/kitchen/alarms", method: .post, headers: headers,
                                     body: ByteBuffer(string: #"{"text":"10m Tea"}"#)) { response in
                #expect(response.status == .unprocessableContent)
                let reply = try JSONDecoder().decode(APIReply.self, from: Data(buffer: response.body))
                #expect(reply.error?.code == "invalidConfiguration")
                #expect(reply.error?.message == refusal.message)
                #expect(reply.error?.message.contains("shorten it") == true)
            }
        }
        #expect(control.recorded == [.init(operation: "schedule", node: "kitchen", target: "10m Tea")])
    }

    @Test func withAPasswordThePageAsksForItAndTheSessionIsStrict() async throws {
        let control = RecordingControl()
        try await application(password: "pw", control: control).run { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(String(buffer: response.body).contains(#"type="password""#))
                #expect(!String(buffer: response.body).contains("companion-token"))
            }
            try await client.execute(uri: "/api/state", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/events", method: .get) { #expect($0.status == .unauthorized) }
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            try await client.execute(uri: "/login", method: .post, headers: form, body: ByteBuffer(string: "password=nope")) {
                #expect($0.status == .unauthorized)
            }
            try await client.execute(uri: "/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded", .origin: "http://evil.example"],
                                     body: ByteBuffer(string: "password=pw")) {
                #expect($0.status == .forbidden)
                #expect($0.headers[.setCookie] == nil)
            }
            let setCookie = try await client.execute(uri: "/login", method: .post, headers: form, body: ByteBuffer(string: "password=pw")) { response in
                #expect(response.status == .seeOther)
                return try #require(response.headers[.setCookie])
            }
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            let cookie: HTTPFields = [.cookie: String(setCookie.split(separator: ";")[0])]
            try await client.execute(uri: "/api/state", method: .get, headers: cookie) { response in
                #expect(response.status == .ok)
                let snapshot = try AlarmJSON.decoder.decode(CompanionSnapshot.self, from: Data(buffer: response.body))
                #expect(snapshot.nodes.first?.alarms.first?.title == "Tea")
            }
            let page = try await client.execute(uri: "/", method: .get, headers: cookie) { String(buffer: $0.body) }
            #expect(page.contains("Sign out"))
            var headers = cookie
            headers[HTTPField.Name("X-Companion-Token")!] = try token(in: page)
            try await client.execute(uri: "/api/nodes/kitchen/alarms/\(Fixtures.timerID.uuidString)/cancel", method: .post, headers: headers) {
                #expect($0.status == .ok)
            }
        }
        #expect(control.recorded.map(\.operation) == ["cancel"])
    }

    @Test func theStateNeverCarriesBrokerCredentials() async throws {
        try await application(control: RecordingControl()).run { client in
            try await client.execute(uri: "/api/state", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(text.contains("\"nodes\""))
                #expect(!text.lowercased().contains("password") && !text.contains("username"))
            }
        }
    }
}
