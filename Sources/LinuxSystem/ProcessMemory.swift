import CLinux
import FoundationEssentials
import Glibc

/// The process's heap, as glibc's allocator keeps it, and its mappings of files.
public enum ProcessMemory {
    /// Hands the heap's free pages back to the kernel (`malloc_trim(0)`), so that memory freed
    /// after a burst (decoding the state file, republishing every alarm) stops counting in the
    /// resident set. A few milliseconds for a large heap: call it after such bursts, not per
    /// change. Returns whether any memory was released.
    @discardableResult
    public static func releaseFreedMemory() -> Bool {
        malloc_trim(0) == 1
    }

    /// Serves allocations of `bytes` or more with their own `mmap(2)`, returned to the kernel
    /// when freed, unless the heap already holds a free chunk large enough
    /// (`mallopt(M_MMAP_THRESHOLD)`). glibc's default threshold starts at
    /// 128 KiB but rises to the size of each large block freed, so that large short-lived
    /// buffers (a state snapshot, the answer to a list of every alarm) then come from the
    /// heap, and the small long-lived allocations made meanwhile pin the pages they leave
    /// free. Setting the threshold keeps it fixed. A process-wide setting: call it once, from
    /// the executable's start.
    public static func allocateLargeBlocksSeparately(from bytes: Int32 = 128 * 1024) {
        // mallopt fails only for an unknown parameter or a value above HEAP_MAX_SIZE / 2.
        _ = mallopt(M_MMAP_THRESHOLD, bytes)
    }

    /// Both releases: the read-only file pages, then the heap's free pages (last, so that
    /// what reading `/proc/self/smaps` allocated is given back too).
    /// - Returns: the bytes of file pages unmapped.
    @discardableResult
    public static func releaseUnusedMemory() throws(SystemError) -> Int {
        defer { releaseFreedMemory() }
        return try releaseReadOnlyFilePages()
    }

    /// Unmaps the resident pages of the read-only segments of the executable and its loaded
    /// libraries (code and constant data) with `madvise(MADV_DONTNEED)`.
    ///
    /// The pages stay in the page cache, and whatever runs again faults its page back in from
    /// there (a minor fault, while the page is still cached; a read from the disk once the
    /// kernel has reclaimed it). What only start-up ran (reading the configuration and the
    /// state file, initialising libraries) then stops counting in the resident set. Call it
    /// when start-up is over, not on a path that must be fast: the code that runs next pays
    /// for its faults.
    ///
    /// Only what gives back exactly the same bytes is released: a mapping of `/proc/self/smaps`
    /// that is private, never writable, without a private copy of any page in memory or in
    /// swap, and inside a segment without write permission of an object the dynamic loader
    /// has loaded (`dl_iterate_phdr`). The release happens inside `dl_iterate_phdr`'s
    /// callback, under the loader's lock, so no library is unloaded and its addresses reused
    /// meanwhile; files mapped for a moment (the loader's cache) are never touched.
    /// - Returns: the bytes that were resident in the mappings released.
    @discardableResult
    public static func releaseReadOnlyFilePages() throws(SystemError) -> Int {
        var release = SegmentRelease(
            candidates: FileMapping.parse(smaps: String(decoding: try AtomicFile.read("/proc/self/smaps"), as: UTF8.self)).filter(\.isReleasable),
            pageSize: UInt(sysconf(Int32(_SC_PAGESIZE))))
        _ = withUnsafeMutablePointer(to: &release) { context in
            dl_iterate_phdr({ info, _, context in
                guard let info, let context else { return 0 }
                context.assumingMemoryBound(to: SegmentRelease.self).pointee.releaseReadOnlySegments(of: info.pointee)
                return 0
            }, context)
        }
        return release.releasedBytes
    }
}

/// The candidates of one ``ProcessMemory/releaseReadOnlyFilePages()``, released object by
/// object as `dl_iterate_phdr` reports them.
struct SegmentRelease {
    var candidates: [FileMapping]
    let pageSize: UInt
    var releasedBytes = 0

    /// Releases every candidate that lies wholly inside a loaded segment of `object` without
    /// write permission.
    mutating func releaseReadOnlySegments(of object: clinux_loaded_object) {
        guard let headers = object.dlpi_phdr else { return }
        // Copied first: the headers lie in the object's first segment, which the loop may release,
        // and reading them from there again would fault that page straight back in.
        let programHeaders = Array(UnsafeBufferPointer(start: headers, count: Int(object.dlpi_phnum)))
        for header in programHeaders where header.p_type == UInt32(PT_LOAD) && header.p_flags & UInt32(PF_W) == 0 {
            let first = UInt(object.dlpi_addr) &+ UInt(header.p_vaddr)
            let segment = (first & ~(pageSize - 1))..<((first + UInt(header.p_memsz) + pageSize - 1) & ~(pageSize - 1))
            for index in candidates.indices.reversed()
            where segment.lowerBound <= candidates[index].start && candidates[index].end <= segment.upperBound {
                let mapping = candidates.remove(at: index)
                // A range the kernel refuses (a locked one: EINVAL) stays resident; nothing else changes.
                if madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
                    releasedBytes += (mapping.residentKB ?? 0) * 1024
                }
            }
        }
    }
}

/// One mapping of `/proc/<pid>/smaps`: its address range, permissions, file, and how much of
/// it is resident and privately copied.
struct FileMapping: Equatable {
    var start: UInt
    var end: UInt
    /// The four permission letters, e.g. `r-xp`.
    var permissions: String
    /// The file mapped, or a pseudo-name (`[vdso]`, `[heap]`), or empty for anonymous memory.
    var path: String
    /// The fields read; nil when the kernel did not print them.
    var residentKB: Int?
    /// Pages of the mapping in memory that are private copies (written, or anonymous memory).
    var anonymousKB: Int?
    /// Pages of the mapping in swap: private copies too.
    var swapKB: Int?

    /// Whether `MADV_DONTNEED` gives back exactly what is there: a private, never-writable
    /// mapping of a file that holds no private copy of any page, in memory or in swap, so
    /// every page faults back in with the same bytes. A mapping whose pages were relocated
    /// (RELRO) holds private copies and is left alone, as are writable mappings, pseudo-files,
    /// and any mapping whose fields are missing.
    var isReleasable: Bool {
        let letters = Array(permissions.utf8)
        guard letters.count == 4, let residentKB, let anonymousKB, let swapKB else { return false }
        return letters[0] == UInt8(ascii: "r") && letters[1] == UInt8(ascii: "-")
            && letters[3] == UInt8(ascii: "p") && path.hasPrefix("/")
            && anonymousKB == 0 && swapKB == 0 && residentKB > 0
    }

    /// The mappings in the text of `/proc/<pid>/smaps`. A header line starts each mapping
    /// (`start-end perms offset dev inode [path]`); its `Rss:`, `Anonymous:` and `Swap:` lines
    /// follow. A line that is neither a header nor a `Name: value` field ends the current
    /// mapping: the fields after it are attributed to nothing until the next header.
    static func parse(smaps text: String) -> [FileMapping] {
        var mappings: [FileMapping] = []
        var current: Int?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if let mapping = header(line) {
                mappings.append(mapping)
                current = mappings.count - 1
            } else if isField(line) {
                guard let current, let (name, kilobytes) = field(line) else { continue }
                switch name {
                case "Rss": mappings[current].residentKB = kilobytes
                case "Anonymous": mappings[current].anonymousKB = kilobytes
                case "Swap": mappings[current].swapKB = kilobytes
                default: break
                }
            } else {
                current = nil
            }
        }
        return mappings
    }

    /// A line whose first word ends in a colon (`Rss:`, `VmFlags:`).
    private static func isField(_ line: Substring) -> Bool {
        guard let colon = line.firstIndex(of: ":") else { return false }
        return !line[..<colon].contains(" ")
    }

    private static func header(_ line: Substring) -> FileMapping? {
        let parts = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard parts.count >= 5 else { return nil }
        let range = parts[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
              parts[1].count == 4 else { return nil }
        let path = parts.count == 6 ? String(parts[5].drop { $0 == " " }) : ""
        return FileMapping(start: start, end: end, permissions: String(parts[1]), path: path)
    }

    /// A `Name:   123 kB` line of `smaps` or `status`.
    static func field(_ line: Substring) -> (Substring, Int)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard value.count == 2, value[1] == "kB", let kilobytes = Int(value[0]) else { return nil }
        return (line[..<colon], kilobytes)
    }
}
