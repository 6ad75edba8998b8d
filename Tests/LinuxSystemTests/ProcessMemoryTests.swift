import Glibc
@testable import LinuxSystem
import Testing

@Suite("ProcessMemory")
struct ProcessMemoryTests {
    /// Mappings as /proc/<pid>/smaps shows them (fields cut down to those read, and a few
    /// others).
    static let smaps = """
        55fbda9b3000-55fbdc247000 r-xp 00000000 fe:00 16220275                   /usr/bin/alarmd
        Size:              24144 kB
        Rss:                5812 kB
        Anonymous:             0 kB
        Swap:                  0 kB
        THPeligible:           0
        VmFlags: rd ex mr mw me
        55fbdc248000-55fbdc2ef000 r--p 01894000 fe:00 16220275                   /usr/bin/alarmd
        Rss:                 668 kB
        Anonymous:           668 kB
        Swap:                  0 kB
        55fbdc2ef000-55fbde714000 rw-p 0193b000 fe:00 16220275                   /usr/bin/alarmd
        Rss:                2720 kB
        Anonymous:           340 kB
        Swap:                  0 kB
        7f5b95c20000-7f5b95c82000 r--p 0041f000 fe:00 333177                     /usr/lib/x86_64-linux-gnu/libcrypto.so.3 (deleted)
        Rss:                 392 kB
        Anonymous:             0 kB
        Swap:                  0 kB
        7f5b80000000-7f5b8006a000 rw-p 00000000 00:00 0
        Rss:                 376 kB
        Anonymous:           376 kB
        Swap:                  0 kB
        7ffd1c5f1000-7ffd1c5f3000 r-xp 00000000 00:00 0                          [vdso]
        Rss:                   8 kB
        Anonymous:             0 kB
        Swap:                  0 kB
        7f5b96000000-7f5b96010000 r--p 00000000 fe:00 333178                     /usr/lib/x86_64-linux-gnu/libm.so.6
        Rss:                  12 kB
        Anonymous:             0 kB
        Swap:                  8 kB
        7f5b96010000-7f5b96020000 r--p 00010000 fe:00 333178                     /usr/lib/x86_64-linux-gnu/libm.so.6
        Rss:                  12 kB
        Swap:                  0 kB
        7f5b96020000-7f5b96030000 r--p 00020000 fe:00 333178                     /usr/lib/x86_64-linux-gnu/libm.so.6
        Rss:                  12 kB
        a line the parser does not know
        Anonymous:             0 kB
        Swap:                  0 kB
        """

    @Test("smaps: each mapping's range, permissions, file, resident and private kilobytes")
    func parsesSmaps() {
        let mappings = FileMapping.parse(smaps: Self.smaps)
        #expect(mappings.count == 9)
        #expect(mappings[0] == FileMapping(start: 0x55fb_da9b_3000, end: 0x55fb_dc24_7000, permissions: "r-xp",
                                           path: "/usr/bin/alarmd", residentKB: 5812, anonymousKB: 0, swapKB: 0))
        #expect(mappings[3].path == "/usr/lib/x86_64-linux-gnu/libcrypto.so.3 (deleted)")
        #expect(mappings[4].path == "")
        #expect(mappings[5].path == "[vdso]")
        #expect(mappings[6].swapKB == 8)
        #expect(mappings[7].anonymousKB == nil)
        // The fields after a line it does not know belong to nothing.
        #expect(mappings[8].residentKB == 12 && mappings[8].anonymousKB == nil && mappings[8].swapKB == nil)
    }

    @Test("only read-only file mappings without private copies, in memory or swap, are released")
    func releasableMappings() {
        let releasable = FileMapping.parse(smaps: Self.smaps).map(\.isReleasable)
        // Code: yes. Relocated constants (RELRO, private copies): no. Writable data: no. A
        // library replaced on disk (still mapped, so still readable): yes. Anonymous memory
        // and the vDSO: no. Private copies in swap: no. A field missing: no.
        #expect(releasable == [true, false, false, true, false, false, false, false, false])
    }

    /// The test process itself, through the code of a library that it loads for the test and
    /// nothing else runs. The other tests' threads run on meanwhile and fault their own code back
    /// in (the whole file-backed resident set, compared before and after, once came out larger),
    /// and a symbol lookup anywhere in the process may read zlib's symbol tables (its first
    /// segment) again, but nothing runs zlib's code.
    @Test("releasing this process's read-only file pages takes a library's code out of its resident set")
    func releasesThisProcess() throws {
        // zlib is on every Debian system: dpkg itself needs it.
        let library = try #require(dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL), "libz.so.1 (Debian's zlib1g) could not be loaded")
        defer { dlclose(library) }
        // Run some of its code, so that some of it is resident.
        let symbol = try #require(dlsym(library, "zlibVersion"))
        let zlibVersion = unsafeBitCast(symbol, to: (@convention(c) () -> UnsafePointer<CChar>).self)
        #expect(!String(cString: zlibVersion()).isEmpty)
        let before = try Self.releasableResidentCodeKilobytes(ofLibraryNamed: "libz.so")
        #expect(before > 0)
        let released = try ProcessMemory.releaseReadOnlyFilePages()
        #expect(released >= before * 1024)
        #expect(try Self.releasableResidentCodeKilobytes(ofLibraryNamed: "libz.so") == 0)
    }

    /// The resident kilobytes of the releasable executable mappings of the library whose file
    /// name starts with `name`.
    static func releasableResidentCodeKilobytes(ofLibraryNamed name: String) throws -> Int {
        let smaps = String(decoding: try AtomicFile.read("/proc/self/smaps"), as: UTF8.self)
        return FileMapping.parse(smaps: smaps)
            .filter { $0.isReleasable && $0.permissions.contains("x") && $0.path.split(separator: "/").last?.hasPrefix(name) == true }
            .reduce(0) { $0 + ($1.residentKB ?? 0) }
    }

    /// Files the process maps itself are not segments of a loaded object: never released,
    /// whether read only or written (a private copy that a release would throw away).
    @Test("a file this process maps itself is left alone, read or written")
    func ownMappingsAreLeftAlone() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("data")
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        try AtomicFile.write([UInt8](repeating: UInt8(ascii: "a"), count: 4 * pageSize), to: path)
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let readOnly = try #require(mmap(nil, 4 * pageSize, PROT_READ, MAP_PRIVATE, descriptor, 0))
        let written = try #require(mmap(nil, 4 * pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE, descriptor, 0))
        defer {
            munmap(readOnly, 4 * pageSize)
            munmap(written, 4 * pageSize)
        }
        #expect(readOnly.load(fromByteOffset: 2 * pageSize, as: UInt8.self) == UInt8(ascii: "a"))
        written.storeBytes(of: UInt8(ascii: "b"), toByteOffset: pageSize, as: UInt8.self)
        try #require(mprotect(written, 4 * pageSize, PROT_READ) == 0)

        try ProcessMemory.releaseReadOnlyFilePages()

        #expect(written.load(fromByteOffset: pageSize, as: UInt8.self) == UInt8(ascii: "b"))
        let smaps = String(decoding: try AtomicFile.read("/proc/self/smaps"), as: UTF8.self)
        let mapping = FileMapping.parse(smaps: smaps).first { $0.start == UInt(bitPattern: readOnly) }
        #expect(mapping?.isReleasable == true)
        #expect((mapping?.residentKB ?? 0) > 0)
    }
}
