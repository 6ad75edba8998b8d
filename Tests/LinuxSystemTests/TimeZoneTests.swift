import Foundation
import Glibc
import Testing
@testable import LinuxSystem

@Suite("SystemTimeZone")
struct SystemTimeZoneTests {
    @Test func readsTheZoneFromTheLocaltimeSymlink() throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("/usr/share/zoneinfo/Asia/Tokyo", files.localtime) == 0)
        #expect(SystemTimeZone.identifier(files: files) == "Asia/Tokyo")
    }

    @Test func readsARelativeLinkIntoAVariantTree() throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("../usr/share/zoneinfo/right/Europe/Berlin", files.localtime) == 0)
        #expect(SystemTimeZone.identifier(files: files) == "Europe/Berlin")
    }

    @Test func fallsBackToTheTimezoneFileWhenLocaltimeIsACopy() throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        try AtomicFile.write(Array("TZif".utf8), to: files.localtime)
        try AtomicFile.write(Array("America/New_York\n".utf8), to: files.timezone)
        #expect(SystemTimeZone.identifier(files: files) == "America/New_York")
    }

    @Test func fallsBackToTheProcessDefaultWhenNoFileNamesAKnownZone() throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("/usr/share/zoneinfo/Not/AZone", files.localtime) == 0)
        try AtomicFile.write(Array("Nowhere/Special".utf8), to: files.timezone)
        #expect(SystemTimeZone.identifier(files: files) == TimeZone.current.identifier)
    }
}

@Suite("TimeZoneWatcher", .serialized)
struct TimeZoneWatcherTests {
    @Test func reportsTheLocaltimeSymlinkReplacedByRename() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("/usr/share/zoneinfo/Europe/Berlin", files.localtime) == 0)

        let watcher = Task { () throws -> String? in
            var changes = TimeZoneWatcher(files: files, logger: quietLogger).makeAsyncIterator()
            // What timedatectl does: a new link beside the old one, renamed over it.
            guard symlink("/usr/share/zoneinfo/Asia/Tokyo", directory.file("localtime.new")) == 0,
                  rename(directory.file("localtime.new"), files.localtime) == 0
            else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            return try await changes.next()
        }
        let change = try await value(of: watcher, within: hangGuard, waitingFor: "the time-zone change")
        #expect(change == "Asia/Tokyo")
    }

    @Test func reportsTheLocaltimeSymlinkRepointedByDeleteAndCreate() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("/usr/share/zoneinfo/Europe/Berlin", files.localtime) == 0)

        let watcher = Task { () throws -> [String] in
            var changes = TimeZoneWatcher(files: files, logger: quietLogger).makeAsyncIterator()
            // What `ln -sf` does: unlink, then symlink. The watcher may wake in between.
            guard unlink(files.localtime) == 0,
                  symlink("/usr/share/zoneinfo/America/Sao_Paulo", files.localtime) == 0
            else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            var seen: [String] = []
            while let change = try await changes.next() {
                seen.append(change)
                if change == "America/Sao_Paulo" { break }
            }
            return seen
        }
        let seen = try await value(of: watcher, within: hangGuard, waitingFor: "the time-zone change")
        #expect(seen.last == "America/Sao_Paulo")
        #expect(seen.count <= 2)
    }

    @Test func ignoresOtherFilesInTheDirectory() throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        #expect(symlink("/usr/share/zoneinfo/Europe/Berlin", files.localtime) == 0)
        // The watch itself, read by hand: the kernel queues each event by the time its call returns.
        var watch = try TimeZoneFileWatch(files: files, logger: quietLogger)
        try AtomicFile.write(Array("unrelated".utf8), to: directory.file("hostname"))
        #expect(try watch.readEvent() == nil)
        // Replaced in one step, as timedatectl does.
        #expect(symlink("/usr/share/zoneinfo/Asia/Tokyo", directory.file("localtime.new")) == 0)
        #expect(rename(directory.file("localtime.new"), files.localtime) == 0)
        #expect(try watch.readEvent() == "Asia/Tokyo")
    }

    @Test func reportsTheTimezoneFileRewritten() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        try AtomicFile.write(Array("Europe/Berlin\n".utf8), to: files.timezone)

        let watcher = Task { () throws -> String? in
            var changes = TimeZoneWatcher(files: files, logger: quietLogger).makeAsyncIterator()
            try AtomicFile.write(Array("Asia/Tokyo\n".utf8), to: files.timezone)
            return try await changes.next()
        }
        let change = try await value(of: watcher, within: hangGuard, waitingFor: "the time-zone change")
        #expect(change == "Asia/Tokyo")
    }

    @Test func watchingAMissingDirectoryFailsWithENOENT() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("gone/localtime"), timezone: directory.file("gone/timezone"))
        var changes = TimeZoneWatcher(files: files, logger: quietLogger).makeAsyncIterator()
        let error = await #expect(throws: SystemError.self) { _ = try await changes.next() }
        #expect(error?.codeName == "ENOENT")
        #expect(error?.message.contains(directory.file("gone")) == true)
    }

    @Test func cancellingTheConsumerEndsTheSequenceAndItsThread() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        let watcher = Task { () throws -> String? in
            try await TimeZoneWatcher(files: files, logger: quietLogger).first { _ in true }
        }
        #expect(await eventually(within: hangGuard) { threadNames().contains("alarmd-tzwatch") })
        watcher.cancel()
        let change = try await value(of: watcher, within: hangGuard, waitingFor: "the cancelled watcher to return")
        #expect(change == nil)
        #expect(await eventually(within: hangGuard) { !threadNames().contains("alarmd-tzwatch") })
    }

    @Test func leavingTheLoopAfterAChangeStopsTheThread() async throws {
        let directory = try TemporaryDirectory()
        let files = TimeZoneFiles(localtime: directory.file("localtime"), timezone: directory.file("timezone"))
        let watcher = Task { () throws -> String? in
            let changes = TimeZoneWatcher(files: files, logger: quietLogger)
            var iterator = changes.makeAsyncIterator()
            guard symlink("/usr/share/zoneinfo/Asia/Tokyo", files.localtime) == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
            return try await iterator.next()
        }
        let identifier = try await value(of: watcher, within: hangGuard, waitingFor: "the time-zone change")
        #expect(identifier == "Asia/Tokyo")
        #expect(await eventually(within: hangGuard) { !threadNames().contains("alarmd-tzwatch") })
    }
}
