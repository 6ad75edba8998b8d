import CLinux

/// The process's heap, as glibc's allocator keeps it.
public enum ProcessMemory {
    /// Hands the heap's free pages back to the kernel (`malloc_trim(0)`), so that memory freed
    /// after a burst (decoding the state file, republishing every alarm) stops counting in the
    /// resident set. A few milliseconds for a large heap: call it after such bursts, not per
    /// change. Returns whether any memory was released.
    @discardableResult
    public static func releaseFreedMemory() -> Bool {
        malloc_trim(0) == 1
    }
}
