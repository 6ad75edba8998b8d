import AlarmKit
import Foundation
import Testing

@Suite("docs/porting.md")
struct PortingExampleTests {
    /// The repository's root, found from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The blocks between `// example: NAME` and `// end` of Examples.swift.
    static func exampleBlocks() throws -> [String: String] {
        let source = try String(contentsOf: root.appending(path: "Tests/PortingExamples/Examples.swift"), encoding: .utf8)
        var blocks: [String: String] = [:]
        var current: (name: String, lines: [String])?
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("// example: ") {
                current = (String(line.dropFirst("// example: ".count)), [])
            } else if line == "// end", let block = current {
                blocks[block.name] = block.lines.joined(separator: "\n")
                current = nil
            } else {
                current?.lines.append(String(line))
            }
        }
        return blocks
    }

    @Test("Every example in the document is code that compiles here")
    func documentMatchesCode() throws {
        let document = try String(contentsOf: Self.root.appending(path: "docs/porting.md"), encoding: .utf8)
        let blocks = try Self.exampleBlocks()
        #expect(blocks.count == 10)
        for (name, code) in blocks {
            #expect(document.contains("```swift\n\(code)\n```"), "docs/porting.md lacks example '\(name)' as compiled")
        }
        // And the other way round: a Swift block the page gains must be compiled here too.
        #expect(document.components(separatedBy: "```swift\n").count - 1 == blocks.count, "docs/porting.md has a Swift block that Examples.swift lacks")
    }

    @Test("The cooking timer counts down 10 minutes, alerts, and Repeat counts down 5")
    func cookingTimerRuns() async throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let clock = ManualAlarmClock(now: start)
        let node = LocalAlarmNode(clock: clock)
        let timer = Task { await node.run() }
        defer { timer.cancel() }
        let manager = AlarmManager(node: node)

        let alarm = try await scheduleCookingTimer(with: manager)
        #expect(alarm.state == .countdown)
        #expect(alarm.countdownDuration == .init(preAlert: 600, postAlert: 300))
        clock.advance(by: 600)
        #expect(await firstAlerting(in: manager.alarmUpdates)?.id == alarm.id)
        try await node.secondaryAction(id: alarm.id)
        let document = try #require(try manager.alarmDocuments.first)
        #expect(document.state == .countdown)
        #expect(document.nextAlertDate == start + 900)
        #expect(document.configuration.attributes.metadata == .object(["method": .string("frying")]))
    }

    @Test("The other examples schedule what they say")
    func otherExamples() async throws {
        let clock = ManualAlarmClock(now: Date(timeIntervalSince1970: 1_795_000_000))  // 2026-11-18
        let node = LocalAlarmNode(configuration: .init(timeZone: TimeZone(identifier: "Europe/Berlin")!), clock: clock)
        let manager = AlarmManager(node: node)
        #expect(try await ensureAuthorized(with: manager))
        let weekly = try await scheduleWeekdayAlarm(with: manager)
        #expect(weekly.state == .scheduled)
        let christmas = try await scheduleChristmasEve(with: manager)
        #expect(christmas.schedule == .fixed(Date(timeIntervalSince1970: 1_798_131_600)))
        let lights = try await scheduleAlarmWithLights(with: manager)
        let documents = try manager.alarmDocuments
        #expect(documents.first { $0.id == lights.id }?.configuration.secondaryIntent
            == .publish(topic: "home/bedroom/lights/set", payload: "ON"))
        #expect(documents.first { $0.id == weekly.id }?.configuration.sound == .named("gentle"))
    }

    @Test("An alert built without a stop button shows the node's default one, in its document too")
    func defaultStopButton() async throws {
        let node = LocalAlarmNode(clock: ManualAlarmClock(now: Date(timeIntervalSince1970: 1_795_000_000)))
        let manager = AlarmManager(node: node)
        let alarm = try await scheduleWeekdayAlarm(with: manager)
        let document = try #require(try manager.alarmDocuments.first { $0.id == alarm.id })
        let alert = document.configuration.attributes.presentation.alert
        #expect(alert.stopButton == AlarmButton(text: "Stop", textColor: .white, systemImageName: "stop.circle"))
        #expect(alert.secondaryButton == .snoozeButton)
        let json = try JSONValue(encoding: document)
        #expect(json["attributes"]?["presentation"]?["alert"]?["stopButton"]?["text"] == .string("Stop"))
    }

    @Test("A widget's function over ContentState reads the countdown, then the pause")
    func widgetLine() async throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let clock = ManualAlarmClock(now: start)
        let node = LocalAlarmNode(clock: clock)
        let manager = AlarmManager(node: node)
        let alarm = try await scheduleCookingTimer(with: manager)
        func line() throws -> String {
            let document = try #require(try manager.alarmDocuments.first { $0.id == alarm.id })
            let erased = document.configuration.attributes
            let attributes = AlarmAttributes(presentation: erased.presentation,
                                             metadata: try erased.metadata?.decode(as: CookingData.self), tintColor: erased.tintColor)
            let state = AlarmAttributes<CookingData>.ContentState(alarmID: document.id, mode: try #require(document.presentationState))
            return countdownLine(attributes: attributes, state: state, now: clock.now)
        }
        clock.advance(by: 59.5)
        #expect(try line() == "Cooking: 541 s left")
        try await manager.pause(id: alarm.id)
        #expect(try line() == "Paused: 541 s left")
    }

    @Test("An exhaustive switch over AlarmManager.AlarmError explains the limit; the node's errors stay apart")
    func errors() async {
        let clock = ManualAlarmClock(now: Date(timeIntervalSince1970: 1_795_000_000))
        let full = AlarmManager(node: LocalAlarmNode(configuration: .init(maximumAlarms: 1), clock: clock))
        #expect(await scheduleOrExplain(with: full) == "Scheduled.")
        #expect(await scheduleOrExplain(with: full) == "Too many alarms: delete one first.")
        let denied = AlarmManager(node: LocalAlarmNode(state: NodeState(authorization: .denied), clock: clock))
        #expect(await scheduleOrExplain(with: denied).hasPrefix("unauthorized: this node has not authorized scheduling"))
    }
}
