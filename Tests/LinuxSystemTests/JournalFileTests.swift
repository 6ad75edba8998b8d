import Foundation
import Glibc
import Testing
@testable import LinuxSystem

@Suite("JournalFile")
struct JournalFileTests {
    /// The file's length on disk (`stat(2)`).
    static func length(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    @Test("the file runs ahead of the appends in zeros, a chunk at a time, so most appends leave its size alone")
    func appendsRewriteZerosWrittenAhead() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.journal")
        let chunk = JournalFile.preallocationChunk
        let journal = try JournalFile(resetting: path, header: Array("header\n".utf8))
        #expect(Self.length(path) == chunk)
        var expected = Array("header\n".utf8)
        // Lines of 1,000 bytes: the 66th crosses the first chunk's end.
        for number in 0..<70 {
            let line = Array(String(repeating: "\(number % 10)", count: 999).utf8) + [UInt8(ascii: "\n")]
            try journal.append(line)
            expected += line
            #expect(journal.size == expected.count)
            #expect(Self.length(path) == (expected.count < chunk ? chunk : 2 * chunk), "after line \(number)")
        }
        let contents = try AtomicFile.read(path)
        #expect(Array(contents.prefix(expected.count)) == expected)
        #expect(contents.dropFirst(expected.count).allSatisfy { $0 == 0 })

        // Reset: the header alone again, and one chunk.
        _ = try JournalFile(resetting: path, header: Array("next\n".utf8))
        #expect(Self.length(path) == chunk)
        #expect(Array(try AtomicFile.read(path).prefix(6)) == Array("next\n\0".utf8))
    }

    @Test("an append that fills the chunk exactly still leaves a zero after it, in a new chunk")
    func anAppendEndingOnTheChunkBoundaryExtends() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.journal")
        let chunk = JournalFile.preallocationChunk
        let journal = try JournalFile(resetting: path, header: [UInt8(ascii: "h")])
        try journal.append([UInt8](repeating: UInt8(ascii: "x"), count: chunk - 1))
        #expect(journal.size == chunk)
        #expect(Self.length(path) == 2 * chunk)
    }
}
