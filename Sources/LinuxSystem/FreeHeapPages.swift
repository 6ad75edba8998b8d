import CLinux

/// Gives the free pages inside malloc's heap back to the kernel: glibc's `malloc_trim(0)`.
///
/// glibc returns free memory by itself only from the top of its heap; a burst of large
/// short-lived buffers (a `list` reply of 100 alarms is about 50 KiB, copied on its way to the
/// socket) leaves free holes below long-lived blocks, and the process keeps them as anonymous
/// memory that no other process can use (measured here: about 0.4 MiB after 1,000 commands).
public func releaseFreeHeapPages() { malloc_trim(0) }
