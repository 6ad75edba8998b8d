import Foundation

/// The companion's own start-up options, checked: where it listens, and its password when it
/// listens beyond loopback.
public struct CompanionLaunch: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// The password the page asks for; nil on loopback without `--password-file`.
    public var password: String?

    /// The default: this machine only.
    public static let defaultListen = "127.0.0.1:8080"

    /// Checks `--listen` and reads `--password-file`. An address other than loopback needs a
    /// password file: the page controls alarms, and anyone on the network could reach it.
    public init(listen: String, passwordFile: String?) throws(CompanionError) {
        guard let (host, port) = Self.parseListen(listen) else {
            throw .usage("--listen '\(listen)' is not an address: write HOST:PORT or [IPv6]:PORT, e.g. 127.0.0.1:8080 (port 0 picks a free one)")
        }
        (self.host, self.port) = (host, port)
        if let passwordFile {
            password = try Self.readPassword(passwordFile)
        } else if host != "::1", !CompanionAccess.isLoopbackHost(host) {
            throw .usage("--listen \(listen) reaches beyond this machine: give --password-file FILE (one line, the password "
                + "the page will ask for), or listen on 127.0.0.1")
        }
    }

    /// Reads `HOST:PORT`, `[v6]:PORT`, or `:PORT` (loopback); nil when malformed.
    static func parseListen(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            return nil
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "127.0.0.1" }
        guard !host.contains(" "), host.contains(":") == text.hasPrefix("[") else { return nil }
        return (host, port)
    }

    /// The first line of `path`, which must not be empty, nor readable by every user (as ssh
    /// refuses a key others may read).
    static func readPassword(_ path: String) throws(CompanionError) -> String {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw .usage("--password-file \(path) cannot be read: check the path and that this user may read it")
        }
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path  // the file, not a link to it
        if let mode = (try? FileManager.default.attributesOfItem(atPath: target))?[.posixPermissions] as? Int, mode & 0o004 != 0 {
            throw .usage("--password-file \(path) may be read by every user of this machine: chmod o-r \(path)")
        }
        // "\r\n" is one Character: split on any line break.
        let password = String(text.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: \.isNewline).first ?? "")
        guard !password.isEmpty else { throw .usage("--password-file \(path) is empty: write the password on its first line") }
        return password
    }
}
