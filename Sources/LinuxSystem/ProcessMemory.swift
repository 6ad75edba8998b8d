import CLinux
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

    /// Serves every allocation of `bytes` or more with its own `mmap(2)`, returned to the
    /// kernel when freed (`mallopt(M_MMAP_THRESHOLD)`). glibc's default threshold starts at
    /// 128 KiB but rises to the size of each large block freed, so that large short-lived
    /// buffers (a state snapshot, the answer to a list of every alarm) then come from the
    /// heap, and the small long-lived allocations made meanwhile pin the pages they leave
    /// free: in alarmd, with 1,000 alarms, 15 MiB of heap after a few commands instead of 8.
    /// Setting the threshold keeps it fixed. Call it once, at start.
    public static func allocateLargeBlocksSeparately(from bytes: Int32 = 128 * 1024) {
        // mallopt fails only for an unknown parameter or a value above HEAP_MAX_SIZE / 2.
        _ = mallopt(M_MMAP_THRESHOLD, bytes)
    }

    /// Both releases: the heap's free pages, then the read-only file pages. For the moments
    /// when the daemon has gone quiet (start-up over, a burst of changes over).
    /// - Returns: the bytes of file pages unmapped.
    @discardableResult
    public static func releaseUnusedMemory() throws(SystemError) -> Int {
        releaseFreedMemory()
        return try releaseReadOnlyFilePages()
    }

    /// Unmaps the resident pages of the process's read-only file mappings (its code and
    /// constant data, and those of its shared libraries) with `madvise(MADV_DONTNEED)`, after
    /// reading `/proc/self/smaps` for the mappings that hold no private copy of any page.
    ///
    /// The pages stay in the page cache, and whatever runs again faults its page back in from
    /// there (a minor fault). What only start-up or a burst of work ran (reading the
    /// configuration and the state file, initialising libraries) then stops counting in the
    /// resident set, and the kernel can reclaim it first when memory is short. Call it when the
    /// process has gone quiet, not on a path that must be fast: the code that runs next pays
    /// for its faults. Writable mappings are left alone, whether or not their pages were written.
    /// - Returns: the bytes that were resident in the mappings released.
    @discardableResult
    public static func releaseReadOnlyFilePages() throws(SystemError) -> Int {
        let smaps = try readProcFile("/proc/self/smaps")
        var released = 0
        for mapping in FileMapping.parse(smaps: smaps) where mapping.isReleasable {
            let start = UnsafeMutableRawPointer(bitPattern: mapping.start)
            // A range the kernel refuses (a locked one: EINVAL) stays resident; nothing else changes.
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
                released += mapping.residentKB * 1024
            }
        }
        return released
    }

    /// The resident set as `/proc/self/status` reports it: anonymous and file-backed, in KiB.
    public static func residentKilobytes() throws(SystemError) -> (anonymous: Int, file: Int) {
        let status = try readProcFile("/proc/self/status")
        var anonymous = 0, file = 0
        for line in status.split(separator: "\n") {
            guard let (name, kilobytes) = FileMapping.field(line) else { continue }
            if name == "RssAnon" { anonymous = kilobytes }
            if name == "RssFile" { file = kilobytes }
        }
        return (anonymous, file)
    }

    private static func readProcFile(_ path: String) throws(SystemError) -> String {
        let descriptor = try systemCall("opening \(path) to read it", subject: path) {
            open(path, O_RDONLY | O_CLOEXEC)
        }
        defer { _ = close(descriptor) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try systemCall("reading \(path)", subject: path) {
                Glibc.read(descriptor, &chunk, chunk.count)
            }
            if count == 0 { return String(decoding: contents, as: UTF8.self) }
            contents.append(contentsOf: chunk[..<count])
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
    var residentKB: Int
    /// Pages of the mapping that are private copies (written, or anonymous memory).
    var anonymousKB: Int

    /// Whether `MADV_DONTNEED` gives back exactly what is there: a private, never-writable
    /// mapping of a file that holds no private copy of any page, so every page faults back
    /// in with the same bytes. A mapping whose pages were relocated (RELRO) holds private
    /// copies and is left alone, as are writable mappings and pseudo-files.
    var isReleasable: Bool {
        let letters = Array(permissions.utf8)
        guard letters.count == 4 else { return false }
        return letters[0] == UInt8(ascii: "r") && letters[1] == UInt8(ascii: "-")
            && letters[3] == UInt8(ascii: "p") && path.hasPrefix("/")
            && anonymousKB == 0 && residentKB > 0
    }

    /// The mappings in the text of `/proc/<pid>/smaps`. A header line starts each mapping
    /// (`start-end perms offset dev inode [path]`); its `Rss:` and `Anonymous:` lines follow.
    static func parse(smaps text: String) -> [FileMapping] {
        var mappings: [FileMapping] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if let mapping = header(line) {
                mappings.append(mapping)
            } else if !mappings.isEmpty, let (name, kilobytes) = field(line) {
                switch name {
                case "Rss": mappings[mappings.count - 1].residentKB = kilobytes
                case "Anonymous": mappings[mappings.count - 1].anonymousKB = kilobytes
                default: break
                }
            }
        }
        return mappings
    }

    private static func header(_ line: Substring) -> FileMapping? {
        let parts = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard parts.count >= 5 else { return nil }
        let range = parts[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
              parts[1].count == 4 else { return nil }
        let path = parts.count == 6 ? String(parts[5].drop { $0 == " " }) : ""
        return FileMapping(start: start, end: end, permissions: String(parts[1]), path: path, residentKB: 0, anonymousKB: 0)
    }

    /// A `Name:   123 kB` line of `smaps` or `status`.
    static func field(_ line: Substring) -> (Substring, Int)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard value.count == 2, value[1] == "kB", let kilobytes = Int(value[0]) else { return nil }
        return (line[..<colon], kilobytes)
    }
}
