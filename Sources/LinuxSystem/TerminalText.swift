import CLinux

/// How much room text takes on a terminal.
public enum TerminalText {
    /// The terminal columns `text` takes: for each character, the widest of its scalars by glibc's
    /// wcwidth(3) in the C.UTF-8 locale (2 for an East Asian wide character or an emoji such as ⏰,
    /// 0 for a combining mark), and 1 where wcwidth knows none; 2 for an emoji that terminals draw
    /// wide and wcwidth counts as 1 (a flag, or ❤ with its emoji variation selector).
    public static func columns(_ text: some StringProtocol) -> Int {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } ? text.utf8.count : text.reduce(0) { $0 + columns($1) }
    }

    /// The columns of one character, as ``columns(_:)`` counts them.
    public static func columns(_ character: Character) -> Int {
        let previous = uselocale(utf8Locale)
        defer { uselocale(previous) }
        let widest = character.unicodeScalars.map { Int(wcwidth(wchar_t($0.value))) }.max() ?? 1
        if character.unicodeScalars.contains(where: { $0.properties.isEmojiPresentation || $0.value == 0xFE0F }) { return 2 }
        return widest < 0 ? 1 : widest
    }

    /// Made once and only read (uselocale(3) sets it per thread), so any thread may use it.
    /// Nil where glibc has no C.UTF-8: uselocale then keeps the thread's locale.
    nonisolated(unsafe) private static let utf8Locale = newlocale(CLINUX_LC_CTYPE_MASK, "C.UTF-8", nil)
}
