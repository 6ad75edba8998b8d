import AlarmKit
import AlarmctlCore
import ArgumentParser
import Foundation

extension Alarmctl {
    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the next alert dates of a schedule, as a node in this machine's zone (or --time-zone) computes them.",
            discussion: """
                Needs no node: the dates come from the same schedule code as alarmd's, with its
                daylight-saving rules (a skipped time alerts shifted by the gap; a repeated time once).

                Examples:
                  alarmctl preview "07:00 mon,wed,fri" --count 10 --time-zone Europe/Berlin
                  alarmctl preview 02:30 daily --time-zone Europe/Berlin --from 2026-03-27T00:00
                  alarmctl preview 07:00 weekdays --json     (a JSON array of ISO 8601 UTC times)

                Accepted forms:
                \(ScheduleExpression.acceptedForms)
                """)

        @Argument(help: ArgumentHelp("The schedule, as `alarmctl alarm` takes it.", valueName: "schedule"))
        var schedule: [String]

        @Option(help: "How many dates to list.")
        var count = 10

        @Option(name: .customLong("time-zone"), help: ArgumentHelp("An IANA time zone (default: this machine's).", valueName: "zone"))
        var timeZone: String?

        @Option(help: ArgumentHelp("Start after this instant instead of now (ISO 8601).", valueName: "time"))
        var from: String?

        @OptionGroup var output: OutputOptions

        /// Taken and not used, so that an alias naming the node (`alarmctl --broker pi:1883`) runs preview too.
        @OptionGroup(visibility: .hidden) var connection: ConnectionOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                let expression = try AlarmctlError.reading { () throws(HumanSyntaxError) in try ScheduleExpression.parse(schedule) }
                let zone = try SchedulePreview.timeZone(timeZone)
                let start = try from.map { text throws(AlarmctlError) in try SchedulePreview.start(text, in: zone) } ?? Date()
                let dates = try SchedulePreview.dates(of: expression, after: start, count: count, in: zone)
                output.print("alerts of \"\(schedule.joined(separator: " "))\" in \(zone.identifier) after \(AlarmJSON.string(from: start)):\n"
                    + Rendering.preview(dates, timeZone: zone), json: dates.map(AlarmJSON.string(from:)))
                return nil
            }
        }
    }
}
