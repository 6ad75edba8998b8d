import Foundation
import Glibc
import Testing
@testable import LinuxSystem

@Suite("AtomicFile")
struct AtomicFileTests {
    @Test func writeThenReadRoundTripsAndReplacesWithoutLeavingTemporaryFiles() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.json")

        try AtomicFile.write(Array("first".utf8), to: path)
        #expect(try AtomicFile.read(path) == Data("first".utf8))

        try AtomicFile.write(Array("second, longer".utf8), to: path)
        #expect(try AtomicFile.read(path) == Data("second, longer".utf8))
        #expect(directory.contents() == ["state.json"])
    }

    @Test func newFileIsOwnerOnlyByDefault() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.json")
        try AtomicFile.write(Array("x".utf8), to: path)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test func emptyAndLargeContentsRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.json")
        try AtomicFile.write([UInt8](), to: path)
        #expect(try AtomicFile.read(path).isEmpty)

        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try AtomicFile.write(large, to: path)
        #expect(try AtomicFile.read(path) == Data(large))
    }

    @Test func leftoverTemporaryFilesOfACrashedWriteAreRemovedAndNothingElse() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.json")
        try AtomicFile.write(Array("current".utf8), to: path)
        try AtomicFile.write(Array("half".utf8), to: directory.file(".state.json.tmp-123-456"))
        try AtomicFile.write(Array("hidden".utf8), to: directory.file(".hidden.json"))

        let removed = try AtomicFile.removeLeftoverTemporaryFiles(in: directory.path)

        #expect(removed == [directory.file(".state.json.tmp-123-456")])
        #expect(directory.contents() == [".hidden.json", "state.json"])
        #expect(try AtomicFile.read(path) == Data("current".utf8))
    }

    @Test func quarantineMovesTheFileToATimestampedNameAndNeverOverwrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.json")
        let when = Date(timeIntervalSince1970: 1_795_342_500) // 2026-11-22T10:15:00Z

        try AtomicFile.write(Array("damaged one".utf8), to: path)
        let first = try AtomicFile.quarantine(path, at: when)
        #expect(first == directory.file("state.json.damaged-20261122T101500Z"))

        try AtomicFile.write(Array("damaged two".utf8), to: path)
        let second = try AtomicFile.quarantine(path, at: when)
        #expect(second == directory.file("state.json.damaged-20261122T101500Z-2"))

        #expect(try AtomicFile.read(first) == Data("damaged one".utf8))
        #expect(try AtomicFile.read(second) == Data("damaged two".utf8))
        #expect(directory.contents() == ["state.json.damaged-20261122T101500Z", "state.json.damaged-20261122T101500Z-2"])
    }

    @Test func quarantiningAMissingFileFailsWithENOENT() throws {
        let directory = try TemporaryDirectory()
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.quarantine(directory.file("absent.json"))
        }
        #expect(error?.codeName == "ENOENT")
    }

    @Test func writingIntoAMissingDirectoryFailsWithENOENTNamingTheDirectory() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.file("no-such-directory")
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.write(Array("x".utf8), to: "\(missing)/state.json")
        }
        #expect(error?.code == ENOENT)
        #expect(error?.codeName == "ENOENT")
        #expect(error?.message.contains("\(missing) does not exist") == true)
    }

    @Test func aPathIsSplitIntoItsFolderAndNameAndAFolderIsRefused() throws {
        for (path, directory, name) in [("/var/lib/alarmd/node.json", "/var/lib/alarmd", "node.json"),
                                        ("/node.json", "/", "node.json"), ("state/node.json", "state", "node.json"),
                                        ("node.json", ".", "node.json")] {
            let location = try FileLocation(path)
            #expect((location.directory, location.name) == (directory, name), "\(path)")
        }
        for path in ["", "/", "state/", ".", "state/.."] {
            #expect(throws: SystemError.self, "\(path)") { try FileLocation(path) }
        }
    }

    @Test func readingAMissingFileFailsWithENOENT() throws {
        let directory = try TemporaryDirectory()
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.read(directory.file("state.json"))
        }
        #expect(error?.code == ENOENT)
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
    func writingOnAReadOnlyFileSystemFailsWithEROFS() throws {
        let mount = try ScratchMount.mount(options: "size=64k,ro")
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.write(Array("x".utf8), to: "\(mount.directory.path)/state.json")
        }
        #expect(error?.codeName == "EROFS")
        #expect(error?.message.contains("read-only") == true)
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskFailsWithENOSPCAndKeepsTheOldContents() throws {
        let mount = try ScratchMount.mount(options: "size=64k")
        let path = "\(mount.directory.path)/state.json"
        try AtomicFile.write(Array("old state".utf8), to: path)

        let error = #expect(throws: SystemError.self) {
            try AtomicFile.write([UInt8](repeating: 7, count: 1024 * 1024), to: path)
        }
        #expect(error?.codeName == "ENOSPC")
        #expect(error?.message.contains("writing \(path) failed") == true)
        #expect(error?.message.contains("free space on the file system holding \(mount.directory.path)") == true)
        #expect(try AtomicFile.read(path) == Data("old state".utf8))
        #expect(mount.directory.contents() == ["state.json"])
    }
}

/// A small tmpfs mounted on a temporary directory for the duration of a test.
private final class ScratchMount {
    let directory: TemporaryDirectory

    /// Mounts it, or cancels the test where mounting is not possible (no CAP_SYS_ADMIN).
    static func mount(options: String) throws -> ScratchMount {
        let directory = try TemporaryDirectory()
        guard Glibc.mount("tmpfs", directory.path, "tmpfs", 0, options) == 0 else {
            try Test.cancel("cannot mount a tmpfs here (\(String(cString: strerror(errno))))")
        }
        return ScratchMount(directory: directory)
    }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    deinit {
        _ = umount(directory.path)
    }
}
