/// Lets the options of a subcommand come before its name (`alarmctl --group house timer 10m`),
/// which ArgumentParser reads only after it: the options before the first word that is not an
/// option or an option's value are moved behind that word.
public enum LeadingOptions {
    /// The options that take no value; every other `--name` takes the next word, unless written `--name=value`.
    static let flags: Set<String> = ["--json", "--verbose", "--help", "-h", "--version", "--all", "--no-snooze"]

    public static func movedBehindSubcommand(_ arguments: [String]) -> [String] {
        let index = subcommandIndex(arguments)
        guard index > 0, index < arguments.count else { return arguments }
        return [arguments[index]] + arguments[..<index] + arguments[(index + 1)...]
    }

    /// The first word that is not an option or an option's value: the subcommand's name, unless
    /// it was mistyped; nil when there is none (`alarmctl --help`).
    public static func subcommand(_ arguments: [String]) -> String? {
        let index = subcommandIndex(arguments)
        return index < arguments.count ? arguments[index] : nil
    }

    private static func subcommandIndex(_ arguments: [String]) -> Int {
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-") {
            let argument = arguments[index]
            index += flags.contains(argument) || argument.contains("=") ? 1 : 2
        }
        return index
    }
}
