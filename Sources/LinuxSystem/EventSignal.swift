import CLinux
import Glibc
import Synchronization

/// An eventfd(2) that wakes a thread blocked in poll(2) on ``descriptor``: any thread may
/// ``signal()``; the woken thread calls ``clear()`` and then looks at the work it was woken for.
///
/// Signals between two clears cost one eventfd write together, so a burst of work handed over
/// one piece at a time wakes the thread once (libmosquitto's own wake-up, by contrast, writes and
/// reads a socket pair once per packet).
public final class EventSignal: Sendable {
    private let event: OwnedDescriptor
    /// True from the first signal after a clear until the next clear: the eventfd is readable.
    private let pending = Atomic<Bool>(false)

    /// Creates the eventfd (`eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`).
    ///
    /// - Parameter purpose: what the signal wakes, for the error, e.g. "the MQTT network thread".
    /// - Throws: ``SystemError`` when the process is out of descriptors or memory.
    public init(waking purpose: String) throws(SystemError) {
        event = OwnedDescriptor(try systemCall("creating the eventfd that wakes \(purpose)") {
            eventfd(0, CLINUX_EFD_CLOEXEC | CLINUX_EFD_NONBLOCK)
        })
    }

    /// The descriptor to poll for POLLIN.
    public var descriptor: Int32 { event.raw }

    /// Makes ``descriptor`` readable (`eventfd_write`) unless it already is. Safe from any thread;
    /// call it after the work is handed over.
    public func signal() {
        if !pending.exchange(true, ordering: .sequentiallyConsistent) {
            // The descriptor lives as long as this object; EAGAIN (counter full) leaves it readable.
            _ = eventfd_write(event.raw, 1)
        }
    }

    /// Drains the eventfd (`eventfd_read`), then accepts the next signal. Call it on the woken
    /// thread before it looks at the work: a signal that arrives meanwhile makes the descriptor
    /// readable again, so no work is left without a wake-up.
    public func clear() {
        var count: eventfd_t = 0
        _ = eventfd_read(event.raw, &count)
        pending.store(false, ordering: .sequentiallyConsistent)
        // The caller's next reads of the work may be plain loads (libmosquitto's queue pointer):
        // without a full fence a weakly ordered CPU (a Pi's ARM) may do them before this store
        // is seen, while a signal() that still saw `pending` skips its write: a lost wake-up.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }
}
