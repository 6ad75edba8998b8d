import Foundation
import Synchronization

/// Who may use the page, and which requests are the page's own.
///
/// - Without a password (the companion then listens on loopback only) every request from this
///   machine is let in, but only under a loopback host name, so that a web site that rebinds its
///   DNS name to 127.0.0.1 is still another origin.
/// - With a password, the page asks for it once and keeps a session cookie (`HttpOnly`,
///   `SameSite=Strict`).
/// - Every POST must be the page's own: its `Origin` (when the browser sends one) is this
///   server's, `Sec-Fetch-Site` (when sent) is `same-origin`, and an action carries the session's
///   token in `X-Companion-Token`, which another site can neither read nor send without a CORS
///   preflight that this server never grants.
public final class CompanionAccess: Sendable {
    /// The session cookie's name.
    public static let cookieName = "companion_session"
    /// The header that carries the page's token on actions.
    public static let tokenHeader = "X-Companion-Token"
    /// How long a session lasts after sign-in.
    public static let sessionLifetime: TimeInterval = 30 * 86_400

    private let password: String?
    /// The token of the page when there is no password (there are no sessions then).
    private let openToken: String
    private let sessions = Mutex<[String: Session]>([:])
    private let signInPacing: Mutex<SignInPacing>

    private struct Session {
        var token: String
        var expires: Date
    }

    /// - Parameters:
    ///   - password: nil to let every loopback request in.
    ///   - signInInterval: sign-in attempts are checked one per interval (``awaitSignInTurn()``).
    public init(password: String?, signInInterval: Duration = .seconds(1)) {
        self.password = password
        self.openToken = Self.randomToken()
        self.signInPacing = Mutex(SignInPacing(interval: signInInterval))
    }

    /// Waits for a sign-in attempt's turn; false when too many attempts wait already.
    public func awaitSignInTurn() async -> Bool {
        guard let wait = signInPacing.withLock({ $0.turn(at: .now) }) else { return false }
        try? await Task.sleep(for: wait)
        return true
    }

    public var requiresPassword: Bool { password != nil }

    /// The page's token for a request with `cookie` (nil when a password is needed and the
    /// request has no valid session: the page then asks for the password).
    public func token(cookie: String?, now: Date) -> String? {
        guard password != nil else { return openToken }
        guard let id = Self.sessionID(inCookie: cookie) else { return nil }
        return sessions.withLock { sessions in
            guard let session = sessions[id], session.expires > now else {
                sessions[id] = nil  // expired (nothing to remove when unknown)
                return nil
            }
            return session.token
        }
    }

    /// Checks a password and opens a session; returns the `Set-Cookie` value, nil when the password is wrong.
    public func signIn(password given: String, now: Date) -> String? {
        guard let password, Self.constantTimeEqual(given, password) else { return nil }
        let id = Self.randomToken()
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expires > now }
            sessions[id] = Session(token: Self.randomToken(), expires: now.addingTimeInterval(Self.sessionLifetime))
        }
        return "\(Self.cookieName)=\(id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(Self.sessionLifetime))"
    }

    /// Ends the session of `cookie`; returns the `Set-Cookie` value that removes it.
    public func signOut(cookie: String?) -> String {
        if let id = Self.sessionID(inCookie: cookie) { _ = sessions.withLock { $0.removeValue(forKey: id) } }
        return "\(Self.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    }

    /// Refuses a request whose `Host` is not one this server answers to: without a password, only
    /// loopback names (`localhost`, `127.x.x.x`, `[::1]`) are.
    public func checkHost(_ host: String?) throws(CompanionError) {
        guard password == nil else { return }
        guard let host, Self.isLoopbackHost(host) else {
            throw .forbidden("this companion answers only on localhost: open it as http://127.0.0.1:<port>/, "
                + "or start it with --listen and --password-file to reach it from elsewhere")
        }
    }

    /// Refuses a POST from another site: an `Origin` that is not this server's, or a
    /// `Sec-Fetch-Site` other than `same-origin` (or `none`, a request the user typed).
    public func checkSameOrigin(host: String?, origin: String?, fetchSite: String?) throws(CompanionError) {
        if let fetchSite, fetchSite != "same-origin", fetchSite != "none" {
            throw .forbidden("a request from another site (\(fetchSite)) cannot act on the alarms")
        }
        if let origin {
            guard let host, origin == "http://\(host)" || origin == "https://\(host)" else {
                throw .forbidden("a request from \(origin) cannot act on the alarms: use the companion's own page")
            }
        }
    }

    /// Checks an action's token against the session's.
    public func checkToken(_ sent: String?, cookie: String?, now: Date) throws(CompanionError) {
        guard let expected = token(cookie: cookie, now: now) else { throw .unauthenticated }
        guard let sent, Self.constantTimeEqual(sent, expected) else {
            throw .forbidden("the request has no valid \(Self.tokenHeader): reload the page and try again")
        }
    }

    // MARK: Helpers

    static func sessionID(inCookie cookie: String?) -> String? {
        cookie?.split(separator: ";").lazy
            .map { part -> [Substring] in part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1) }
            .first { pair in pair.count == 2 && pair[0] == cookieName }.map { String($0[1]) }
    }

    static func isLoopbackHost(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            return name[name.index(after: name.startIndex)..<end] == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name == "localhost" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// 32 random bytes as hex, from the system's secure generator.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
    }

    /// Compares without stopping at the first difference, so the time taken tells nothing.
    static func constantTimeEqual(_ left: String, _ right: String) -> Bool {
        let (a, b) = (Array(left.utf8), Array(right.utf8))
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}

/// Sign-in attempts checked one per `interval`, however many arrive at once, so that guessing
/// gets one try per interval; an attempt that would wait longer than `queueLimit` is refused.
struct SignInPacing {
    var interval: Duration
    var queueLimit: Duration = .seconds(30)
    private var next: ContinuousClock.Instant?

    init(interval: Duration) { self.interval = interval }

    /// How long the attempt arriving at `now` waits for its turn; nil when it is refused.
    mutating func turn(at now: ContinuousClock.Instant) -> Duration? {
        let slot = max(next ?? now, now)
        guard slot - now <= queueLimit else { return nil }
        next = slot + interval
        return slot - now
    }
}
