import CLinux
import Glibc
@testable import LinuxSystem
import Testing

@Suite("ProcessMemory")
struct ProcessMemoryTests {
    /// Five mappings as /proc/<pid>/smaps shows them (fields cut down to those read, and one
    /// line without a unit).
    static let smaps = """
        55fbda9b3000-55fbdc247000 r-xp 00000000 fe:00 16220275                   /usr/bin/alarmd
        Size:              24144 kB
        Rss:                5812 kB
        Anonymous:             0 kB
        THPeligible:           0
        VmFlags: rd ex mr mw me
        55fbdc248000-55fbdc2ef000 r--p 01894000 fe:00 16220275                   /usr/bin/alarmd
        Rss:                 668 kB
        Anonymous:           668 kB
        55fbdc2ef000-55fbde714000 rw-p 0193b000 fe:00 16220275                   /usr/bin/alarmd
        Rss:                2720 kB
        Anonymous:           340 kB
        7f5b95c20000-7f5b95c82000 r--p 0041f000 fe:00 333177                     /usr/lib/x86_64-linux-gnu/libcrypto.so.3 (deleted)
        Rss:                 392 kB
        Anonymous:             0 kB
        7f5b80000000-7f5b8006a000 rw-p 00000000 00:00 0
        Rss:                 376 kB
        Anonymous:           376 kB
        7ffd1c5f1000-7ffd1c5f3000 r-xp 00000000 00:00 0                          [vdso]
        Rss:                   8 kB
        Anonymous:             0 kB
        """

    @Test("smaps: each mapping's range, permissions, file, resident and private kilobytes")
    func parsesSmaps() {
        let mappings = FileMapping.parse(smaps: Self.smaps)
        #expect(mappings.count == 6)
        #expect(mappings[0] == FileMapping(start: 0x55fb_da9b_3000, end: 0x55fb_dc24_7000, permissions: "r-xp",
                                           path: "/usr/bin/alarmd", residentKB: 5812, anonymousKB: 0))
        #expect(mappings[3].path == "/usr/lib/x86_64-linux-gnu/libcrypto.so.3 (deleted)")
        #expect(mappings[4].path == "")
        #expect(mappings[5].path == "[vdso]")
    }

    @Test("only read-only file mappings without private copies are released")
    func releasableMappings() {
        let releasable = FileMapping.parse(smaps: Self.smaps).map(\.isReleasable)
        // Code: yes. Relocated constants (RELRO, private copies): no. Writable data: no. A
        // library replaced on disk (still mapped, so still readable): yes. Anonymous memory
        // and the vDSO: no.
        #expect(releasable == [true, false, false, true, false, false])
    }

    /// With glibc's default, freeing a large block raises the threshold to its size, so the
    /// next block of that size comes from the heap; with the threshold set, it is mapped again.
    @Test("blocks above the threshold keep being mapped on their own, even after one was freed")
    func largeBlocksStayMapped() throws {
        ProcessMemory.allocateLargeBlocksSeparately(from: 128 * 1024)
        for _ in 0..<2 {
            let mappedBefore = mallinfo2().hblkhd
            let block = try #require(malloc(512 * 1024))
            #expect(mallinfo2().hblkhd >= mappedBefore + 512 * 1024)
            free(block)
        }
    }

    /// The test process itself: its code is mapped from files, so releasing drops its
    /// file-backed resident set, and the code it runs next faults back in unchanged.
    @Test("releasing this process's read-only file pages lowers its file-backed resident set")
    func releasesThisProcess() throws {
        let before = try ProcessMemory.residentKilobytes()
        let released = try ProcessMemory.releaseReadOnlyFilePages()
        let after = try ProcessMemory.residentKilobytes()
        #expect(released > 0)
        #expect(after.file < before.file)
    }
}
