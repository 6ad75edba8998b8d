import AlarmctlCore
import Foundation
import Glibc
import LinuxSystem

/// Standard output and standard error, and the terminal behind them. Everything alarmctl prints
/// goes through here, with write(2): a write that fails is handled, never a trap.
enum Terminal {
    /// Whether standard output is a terminal (not a pipe or a file).
    static var isInteractive: Bool { isatty(STDOUT_FILENO) == 1 }

    /// The terminal's width: TIOCGWINSZ, else $COLUMNS, else 80.
    static var columns: Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return 80
    }

    /// Writes `text` to standard output as is, at once. When nobody reads it any more (a pipe
    /// whose reader has gone, as in `alarmctl watch | head -2`), alarmctl exits quietly with
    /// status 0, as Unix tools do; when it cannot be written otherwise (a full disk), it says so
    /// on standard error and exits with ``ExitStatus/outputFailed``.
    static func write(_ text: String) {
        guard let failure = StandardStream.output.write(text) else { return }
        if failure == EPIPE { exit(ExitStatus.success.rawValue) }
        printError("alarmctl: cannot write standard output (\(String(cString: strerror(failure)))): check the file or pipe it goes to")
        exit(ExitStatus.outputFailed.rawValue)
    }

    /// When standard output is a pipe or a socket, exits quietly with status 0 as soon as nobody
    /// reads it any more, not at the next ``write(_:)``: `alarmctl watch --json | head -2` then
    /// ends with head, even on a node where nothing changes for hours. A thread of its own
    /// (`stdout-reader`): it blocks in poll(2), which reports POLLERR or POLLHUP once the reader
    /// is gone. `_exit`: nothing is left to flush, and a write's EPIPE may be exiting meanwhile.
    /// Without the thread, the next write still notices.
    static func exitWhenReaderLeaves() {
        var status = stat()
        guard fstat(STDOUT_FILENO, &status) == 0, [S_IFIFO, S_IFSOCK].contains(status.st_mode & S_IFMT) else { return }
        try? startDedicatedThread(named: "stdout-reader") {
            var output = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            while poll(&output, 1, -1) < 0, errno == EINTR {}
            if output.revents & Int16(POLLERR | POLLHUP) != 0 { _exit(ExitStatus.success.rawValue) }
        }
    }

    /// Writes `line` and a line feed to standard output (see ``write(_:)``), its control
    /// characters but line feeds replaced: node messages, statuses and group names are anyone's
    /// to publish, and must not drive the terminal (`AlarmText.printable`).
    static func print(_ line: String) { write(AlarmText.printable(line, keepingLineFeeds: true) + "\n") }

    /// Writes `line` and a line feed to standard error, printable as ``print(_:)`` makes it. A
    /// failure is ignored: there is nowhere left to report it, and the exit status still tells what happened.
    static func printError(_ line: String) { StandardStream.error.write(AlarmText.printable(line, keepingLineFeeds: true) + "\n") }
}
