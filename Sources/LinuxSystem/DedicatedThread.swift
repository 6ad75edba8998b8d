import CLinux
import Glibc

/// Starts a detached POSIX thread of its own, named `name` (as `top -H` and
/// `/proc/<pid>/task/*/comm` show it; at most 15 bytes are kept), that runs `body` once.
///
/// For loops that block in the kernel (poll, read on a timerfd, libmosquitto's network loop):
/// they must not hold a thread of Swift's cooperative pool. Calls `pthread_attr_setdetachstate`,
/// `pthread_create` and, on the new thread, `prctl(PR_SET_NAME)`.
///
/// - Throws: ``SystemError`` when the thread cannot be created (`EAGAIN`: the process or the
///   system is out of threads or memory).
public func startDedicatedThread(named name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
    let start = ThreadStart(name: name, body: body)
    let context = Unmanaged.passRetained(start).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let result = pthread_create(&thread, &attributes, { context in
        let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
        _ = start.name.withCString { clinux_set_thread_name($0) }
        start.body()
        return nil
    }, context)
    guard result == 0 else {
        Unmanaged<ThreadStart>.fromOpaque(context).release()
        throw SystemError(code: result, action: "starting the \(name) thread",
                          remedy: "the process or the system is out of threads or memory: free memory or raise the limits (TasksMax= in the unit)")
    }
}

/// What a new thread runs, handed over through `pthread_create`'s context pointer.
private final class ThreadStart: Sendable {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
