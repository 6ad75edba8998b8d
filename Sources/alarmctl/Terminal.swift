import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The terminal standard output writes to.
enum Terminal {
    /// Whether standard output is a terminal (not a pipe or a file).
    static var isInteractive: Bool { isatty(STDOUT_FILENO) == 1 }

    /// The width to fit tables to: the terminal's, or nil when output goes to a pipe or a file.
    static var width: Int? { isInteractive ? columns : nil }

    /// The terminal's width: TIOCGWINSZ, else $COLUMNS, else 80.
    static var columns: Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return 80
    }

    /// Writes `text` as is, at once.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
