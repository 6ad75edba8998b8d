import CLinux
import FoundationEssentials
import Glibc

/// Whole-file reads and writes that survive a power cut: after a crash at any instant the
/// file holds either its old contents or its new ones, never a mix.
public enum AtomicFile {
    /// Replaces the file at `path` with `bytes`, atomically and durably.
    ///
    /// Writes a temporary file in the same directory (`open(2)` with `O_CREAT | O_EXCL`,
    /// `write(2)`), `fsync(2)`s it, `rename(2)`s it over `path`, then `fsync(2)`s the
    /// directory so the rename itself is on disk. On failure the temporary file is removed
    /// and `path` keeps its old contents. The file is readable and writable by its owner only.
    public static func write(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let location = try FileLocation(path)
        let temporary = "\(location.directory)/\(location.temporaryNamePrefix)\(getpid())-\(UInt32.random(in: .min ... .max))"
        let descriptor = try systemCall("creating a temporary file to write \(path)", subject: location.directory) {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        var renamed = false
        defer { if !renamed { _ = unlink(temporary) } }
        do {
            try writeAll(bytes, to: descriptor, action: "writing \(path)", directory: location.directory)
            try systemCall("flushing \(path) to disk (fsync)", subject: location.directory) { fsync(descriptor) }
        } catch {
            _ = close(descriptor)
            throw error
        }
        try systemCall("closing the temporary file for \(path)", subject: location.directory, retryingOnInterrupt: false) {
            close(descriptor)
        }
        try systemCall("replacing \(path) with its new version (rename)", subject: location.directory) { rename(temporary, path) }
        renamed = true
        try syncDirectory(location.directory)
    }

    /// Removes the temporary files that writes into `folder` left behind when the process died
    /// between creating and renaming them (a crash or power cut; a normal failure removes its
    /// own). Call it at start-up, before writing there. Uses `opendir(3)` and `unlink(2)`.
    /// - Returns: the paths removed.
    @discardableResult
    public static func removeLeftoverTemporaryFiles(in folder: String) throws(SystemError) -> [String] {
        guard let directory = opendir(folder) else {
            throw SystemError(code: errno, action: "listing \(folder) for leftover temporary files", subject: folder)
        }
        defer { closedir(directory) }
        var removed: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasPrefix("."), name.contains(FileLocation.temporaryNameMarker) else { continue }
            let leftover = "\(folder)/\(name)"
            try systemCall("removing the leftover temporary file \(leftover)", subject: folder) { unlink(leftover) }
            removed.append(leftover)
        }
        return removed
    }

    /// Removes the file at `path`, durably: `unlink(2)`, then `fsync(2)` of its directory. A
    /// missing file is no error.
    public static func remove(_ path: String) throws(SystemError) {
        let location = try FileLocation(path)
        if unlink(path) != 0, errno != ENOENT {
            throw SystemError(code: errno, action: "removing \(path)", subject: location.directory)
        }
        try syncDirectory(location.directory)
    }

    /// Renames `path` to `newPath` in the same directory, durably: `rename(2)`, then `fsync(2)`
    /// of the directory.
    public static func move(_ path: String, to newPath: String) throws(SystemError) {
        let location = try FileLocation(path)
        try systemCall("renaming \(path) to \(newPath)", subject: location.directory) { rename(path, newPath) }
        try syncDirectory(location.directory)
    }

    /// The whole contents of the file at `path` (`open(2)`, `read(2)`). A missing file fails
    /// with code `ENOENT`.
    public static func read(_ path: String) throws(SystemError) -> Data {
        let descriptor = try systemCall("opening \(path) to read it", subject: path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { _ = close(descriptor) }
        var contents = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try systemCall("reading \(path)", subject: path) { Glibc.read(descriptor, &chunk, chunk.count) }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[..<count])
        }
    }

    /// Moves a damaged file aside, to `<name>.damaged-<UTC time>` in the same directory
    /// (e.g. `state.json.damaged-20261122T101500Z`), and returns the new path. An existing
    /// file is never overwritten: `renameat2(2)` with `RENAME_NOREPLACE`, adding `-2`, `-3`, …
    /// when the name is taken. The directory is then `fsync(2)`ed.
    /// - Parameter date: the time written into the name.
    public static func quarantine(_ path: String, at date: Date = Date()) throws(SystemError) -> String {
        let location = try FileLocation(path)
        // `yyyyMMdd'T'HHmmss'Z'` in UTC: sortable, and without ':' so the name is easy to type.
        let basePath = "\(path).damaged-\(date.formatted(Date.ISO8601FormatStyle(dateSeparator: .omitted, timeSeparator: .omitted)))"
        var attempt = 1
        while true {
            let candidate = attempt == 1 ? basePath : "\(basePath)-\(attempt)"
            do {
                try systemCall("moving the damaged file \(path) aside to \(candidate)", subject: path) {
                    clinux_renameat2(AT_FDCWD, path, AT_FDCWD, candidate, CLINUX_RENAME_NOREPLACE)
                }
                try syncDirectory(location.directory)
                return candidate
            } catch let error where error.code == EEXIST { attempt += 1 }
        }
    }

    /// Writes every byte of `bytes` with `write(2)`, going on after short writes.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, action: String, directory: String) throws(SystemError) {
        var written = 0
        while written < bytes.count {
            written += try systemCall(action, subject: directory) {
                bytes[written...].withUnsafeBytes { rest in Glibc.write(descriptor, rest.baseAddress, rest.count) }
            }
        }
    }

    static func syncDirectory(_ directory: String) throws(SystemError) {
        let descriptor = try systemCall("opening \(directory) to flush its entries", subject: directory) {
            open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { _ = close(descriptor) }
        try systemCall("flushing the directory \(directory) to disk (fsync)", subject: directory) { fsync(descriptor) }
    }
}

/// A file path split into its directory and its name.
struct FileLocation {
    let directory: String
    let name: String

    /// How the temporary files of atomic writes to this file begin: hidden, and unique after
    /// the prefix (process id and a random number) so concurrent writers never share one.
    var temporaryNamePrefix: String { ".\(name)\(Self.temporaryNameMarker)" }
    static let temporaryNameMarker = ".tmp-"

    /// Splits at the last `/`: `a/b.json` is `b.json` in `a`, `/b.json` in `/`, `b.json` in `.`.
    init(_ path: String) throws(SystemError) {
        if let last = path.lastIndex(of: "/") {
            name = String(path[path.index(after: last)...])
            directory = last == path.startIndex ? "/" : String(path[..<last])
        } else {
            (directory, name) = (".", path)
        }
        guard !name.isEmpty, name != ".", name != ".." else {
            throw SystemError(code: EISDIR, action: "using \(path) as a file", remedy: "the path names a directory: configure a file path")
        }
    }
}
