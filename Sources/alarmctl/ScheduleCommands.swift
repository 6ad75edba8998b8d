import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

/// Options shared by `timer` and `alarm`.
struct AlertOptions: ParsableArguments {
    @Option(help: "What the alert says (1 to 128 bytes).")
    var title: String?

    @Option(help: ArgumentHelp("A named sound; the node maps it to a buzzer pattern (default: the default sound).", valueName: "name"))
    var sound: String?

    @Option(help: ArgumentHelp("Schedule with this UUID; scheduling it again with the same settings changes nothing.", valueName: "uuid"))
    var id: String?

    func alarmID() throws(AlarmctlError) -> UUID {
        guard let id else { return UUID() }
        guard let uuid = UUID(uuidString: id) else {
            throw .usage("--id '\(id)' is not a UUID such as 2F1E6A4C-9B1D-4C7E-8F3A-5D2B1C0E9A77")
        }
        return uuid
    }
}

extension Alarmctl {
    struct Timer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a countdown timer.",
            discussion: """
                The timer counts down on the node and then alerts. Its Repeat button (and
                `alarmctl snooze`) counts --snooze, or the same duration again.

                Examples:
                  alarmctl timer 10m --title Tea
                  alarmctl timer 10m Tea                   (the same: the words after the duration)
                  alarmctl timer 10 minutes --title Tea
                  alarmctl timer 1h30m --title Roast --snooze 5m
                  alarmctl timer 90s --json

                Durations: 90s, 10m, 10 min, 1h30m, 2 hours, 1d; from 1s to 7d. A number
                needs its unit: 10 alone is refused.
                """)

        @Argument(help: ArgumentHelp("How long: 90s, 10m, 10 minutes, 1h30m…; then the title, without --title.", valueName: "duration"))
        var duration: [String]

        @Option(help: ArgumentHelp("What Repeat counts (default: the timer's duration).", valueName: "duration"))
        var snooze: String?

        @OptionGroup var alert: AlertOptions
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                let configuration = try AlarmctlError.reading { () throws(HumanSyntaxError) in
                    let timer = try RequestLine.timer(duration, title: alert.title)
                    return try AlarmRequest.timer(
                        duration: timer.seconds,
                        title: timer.title,
                        snooze: try snooze.map { text throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "--snooze") },
                        sound: alert.sound)
                }
                return try await connection.schedule(id: try alert.alarmID(), output: output) { _ in configuration }
            }
        }
    }

    struct AlarmCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "alarm",
            abstract: "Schedule an alarm at a time of day or on a fixed date.",
            discussion: """
                Times are in the node's time zone (its status names it).

                Examples:
                  alarmctl alarm 07:00                      (the next 07:00, once)
                  alarmctl alarm 07:00 mon,wed,fri --title "Wake up"
                  alarmctl alarm 6:45 weekdays --pre-alert 10m
                  alarmctl alarm 09:30 weekends --no-snooze
                  alarmctl alarm 2026-12-24T18:00 --title Presents
                  alarmctl alarm 2026-12-24T17:00Z          (an exact instant)

                Accepted forms:
                \(ScheduleExpression.acceptedForms)
                """)

        @Argument(help: ArgumentHelp("The time and days, or the date: 07:00 mon,wed,fri | 2026-12-24T18:00", valueName: "when"))
        var when: [String]

        @Option(help: ArgumentHelp("What Snooze counts (default: 9m).", valueName: "duration"))
        var snooze: String?

        @Flag(name: .customLong("no-snooze"), help: "No Snooze button.")
        var noSnooze = false

        @Option(name: .customLong("pre-alert"), help: ArgumentHelp("Count down this long before the alert.", valueName: "duration"))
        var preAlert: String?

        @OptionGroup var alert: AlertOptions
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                let expression = try AlarmctlError.reading { () throws(HumanSyntaxError) in
                    do throws(HumanSyntaxError) { return try ScheduleExpression.parse(when) } catch {
                        throw alert.title == nil ? ScheduleExpression.strayTitle(in: when, titleOption: "--title") ?? error : error
                    }
                }
                if noSnooze, snooze != nil { throw .usage("--snooze and --no-snooze exclude each other: choose one") }
                let (snoozeSeconds, preAlertSeconds) = try AlarmctlError.reading { () throws(HumanSyntaxError) in
                    (noSnooze ? nil : try snooze.map { text throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "--snooze") }
                        ?? AlarmRequest.defaultAlarmSnooze,
                     try preAlert.map { text throws(HumanSyntaxError) in try DurationArgument.seconds(text, option: "--pre-alert") })
                }
                let id = try alert.alarmID()
                let configuration = { (timeZone: TimeZone) throws(AlarmctlError) in
                    try AlarmctlError.reading { () throws(HumanSyntaxError) in
                        try AlarmRequest.alarm(schedule: expression.schedule(in: timeZone), title: alert.title,
                                               snooze: snoozeSeconds, preAlert: preAlertSeconds, sound: alert.sound, timeZone: timeZone)
                    }
                }
                // Mistakes show before connecting, unless the date needs the node's time zone.
                if !expression.needsTimeZone { _ = try configuration(.current) }
                return try await connection.schedule(id: id, output: output, inNodeTimeZone: expression.needsTimeZone, configuration)
            }
        }
    }
}

extension ConnectionOptions {
    /// Schedules alarm `id` on every member of `--group`, or on the node, and prints what was
    /// scheduled; returns a group's failure, for ``OutputOptions/run(_:)``.
    /// `configuration` is made in this machine's time zone, or in the node's when `inNodeTimeZone`;
    /// for a group always in this machine's (members may be in different zones).
    func schedule(
        id: UUID, output: OutputOptions, inNodeTimeZone: Bool = false,
        _ configuration: (TimeZone) throws(AlarmctlError) -> AlarmManager.AlarmConfiguration<JSONValue>
    ) async throws(AlarmctlError) -> AlarmctlError? {
        if let group {
            let configuration = try configuration(.current)
            return try await onGroup(group, output: output, schedules: true) { group throws(AlarmNodeError) in
                [(id, try await group.schedule(id: id, configuration: configuration))]
            }
        }
        try await withSession { session throws(AlarmctlError) in
            let timeZone = try await (inNodeTimeZone ? session.timeZone() : TimeZone.current)
            let document = try await session.schedule(id: id, configuration: try configuration(timeZone), onAuthorizationPrompt: { seconds in
                Terminal.printError("alarmctl: the node asks for authorization first: press its stop button within \(Int(seconds)) s "
                    + "to allow scheduling (its snooze button denies; on a single-button board a long press allows, a short one denies)")
            })
            output.print("scheduled \(Rendering.summary(document, now: Date(), timeZone: session.displayTimeZone))", json: document)
        }
        return nil
    }
}
