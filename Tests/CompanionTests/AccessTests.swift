@testable import CompanionCore
import Foundation
import Testing

@Suite struct AccessTests {
    @Test func theSignInPageEscapesItsMessage() {
        let page = PageAssets.signInPage(error: #"<b>"Tom" & 'Jerry'</b> ⏰"#)
        #expect(page.contains("&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt; ⏰"))
    }

    @Test func withoutAPasswordOnlyLoopbackHostNamesAreAnswered() throws {
        let access = CompanionAccess(password: nil)
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.1.2.3"] {
            #expect(throws: Never.self, "\(host)") { try access.checkHost(host) }
        }
        // A site that rebinds its own name to 127.0.0.1 still sends its name.
        for host in ["evil.example:8080", "127.0.0.1.evil.example", "192.168.1.5:8080", "[::2]:80", ""] {
            #expect(throws: CompanionError.self, "\(host)") { try access.checkHost(host) }
        }
        #expect(throws: CompanionError.self) { try access.checkHost(nil) }
        #expect(throws: Never.self) { try CompanionAccess(password: "pw").checkHost("alarms.home:8080") }
    }

    @Test func aPostFromAnotherOriginIsRefused() {
        let access = CompanionAccess(password: nil)
        #expect(throws: Never.self) { try access.checkSameOrigin(host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", fetchSite: "same-origin") }
        #expect(throws: Never.self) { try access.checkSameOrigin(host: "127.0.0.1:8080", origin: nil, fetchSite: nil) }
        #expect(throws: CompanionError.self) { try access.checkSameOrigin(host: "127.0.0.1:8080", origin: "http://evil.example", fetchSite: nil) }
        #expect(throws: CompanionError.self) { try access.checkSameOrigin(host: "127.0.0.1:8080", origin: nil, fetchSite: "cross-site") }
        #expect(throws: CompanionError.self) { try access.checkSameOrigin(host: "127.0.0.1:8080", origin: "null", fetchSite: nil) }
    }

    @Test func withoutAPasswordThePageTokenIsTheSameForEveryRequest() throws {
        let access = CompanionAccess(password: nil)
        let token = try #require(access.token(cookie: nil, now: Fixtures.now))
        #expect(token.count == 64)
        #expect(throws: Never.self) { try access.checkToken(token, cookie: nil, now: Fixtures.now) }
        #expect(throws: CompanionError.self) { try access.checkToken(nil, cookie: nil, now: Fixtures.now) }
        #expect(throws: CompanionError.self) { try access.checkToken(String(token.dropLast()) + "x", cookie: nil, now: Fixtures.now) }
    }

    @Test func aSignInGivesAStrictHttpOnlySessionWithItsOwnToken() throws {
        let access = CompanionAccess(password: "correct horse")
        #expect(access.signIn(password: "wrong", now: Fixtures.now) == nil)
        #expect(access.token(cookie: nil, now: Fixtures.now) == nil)
        let setCookie = try #require(access.signIn(password: "correct horse", now: Fixtures.now))
        #expect(setCookie.contains("HttpOnly"))
        #expect(setCookie.contains("SameSite=Strict"))
        let cookie = "other=1; " + String(setCookie.split(separator: ";")[0])
        let token = try #require(access.token(cookie: cookie, now: Fixtures.now))
        #expect(throws: Never.self) { try access.checkToken(token, cookie: cookie, now: Fixtures.now) }
        // Another session's token is not this one's.
        let other = String(try #require(access.signIn(password: "correct horse", now: Fixtures.now)).split(separator: ";")[0])
        #expect(throws: CompanionError.self) { try access.checkToken(token, cookie: other, now: Fixtures.now) }
        // A session ends when it expires, and when signed out.
        #expect(access.token(cookie: cookie, now: Fixtures.now.addingTimeInterval(CompanionAccess.sessionLifetime + 1)) == nil)
        _ = access.signOut(cookie: other)
        #expect(access.token(cookie: other, now: Fixtures.now) == nil)
    }

    @Test func comparisonsLookAtEveryByte() {
        #expect(CompanionAccess.constantTimeEqual("abc", "abc"))
        #expect(!CompanionAccess.constantTimeEqual("abc", "abd"))
        #expect(!CompanionAccess.constantTimeEqual("abc", "abcd"))
        #expect(!CompanionAccess.constantTimeEqual("", "a"))
    }
}

@Suite struct LaunchTests {
    @Test func loopbackNeedsNoPassword() throws {
        let launch = try CompanionLaunch(listen: "127.0.0.1:0", passwordFile: nil)
        #expect(launch.host == "127.0.0.1")
        #expect(launch.port == 0)
        #expect(launch.password == nil)
        #expect(try CompanionLaunch(listen: "[::1]:8080", passwordFile: nil).host == "::1")
        #expect(try CompanionLaunch(listen: ":9000", passwordFile: nil).host == "127.0.0.1")
    }

    @Test func anotherAddressRefusesToStartWithoutAPasswordFile() throws {
        let error = #expect(throws: CompanionError.self) { try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: nil) }
        #expect(error?.message.contains("--password-file") == true)
        #expect(throws: CompanionError.self) { try CompanionLaunch(listen: "[::]:8080", passwordFile: nil) }
    }

    @Test func thePasswordIsTheFilesFirstLine() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("companion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("password").path
        try Data("s3cret pass\r\nignored\n".utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        let error = #expect(throws: CompanionError.self) { try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: file) }
        #expect(error?.message == "--password-file \(file) may be read by every user of this machine: chmod o-r \(file)")
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: file)
        #expect(try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: file).password == "s3cret pass")
        // A link (a mounted secret) is judged by the file it names.
        let link = folder.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        #expect(try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: link).password == "s3cret pass")
        try Data("\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: CompanionError.self) { try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: file) }
        #expect(throws: CompanionError.self) { try CompanionLaunch(listen: "0.0.0.0:8080", passwordFile: folder.appendingPathComponent("none").path) }
    }

    @Test func malformedAddressesAreRefused() {
        for listen in ["8080", "host:port", "127.0.0.1:70000", "::1:8080", "a b:80"] {
            #expect(throws: CompanionError.self, "\(listen)") { try CompanionLaunch(listen: listen, passwordFile: nil) }
        }
    }
}

@Suite struct SignInPacingTests {
    @Test func attemptsAtOnceAreCheckedOnePerIntervalAndTheQueueIsBounded() {
        var pacing = SignInPacing(interval: .seconds(1))
        let now = ContinuousClock.now
        // 31 guesses sent together: each waits its turn, a second after the one before.
        #expect((0..<31).map { _ in pacing.turn(at: now) } == (0...30).map { .seconds($0) })
        #expect(pacing.turn(at: now) == nil, "the 32nd would wait over 30 s: refused")
        // Once the queue has passed, an attempt is checked at once.
        #expect(pacing.turn(at: now + .seconds(40)) == .zero)
        #expect(pacing.turn(at: now + .seconds(40.5)) == .milliseconds(500))
    }
}
