import AlarmKit
import AlarmctlCore
import LinuxSystem
import Foundation
import Testing

@Suite("list, show, summaries and JSON output")
struct RenderingTests {
    let now = Fixtures.now
    let berlin = Fixtures.berlin

    @Test("The list table: alerting first, then countdowns, paused, and scheduled by next alert")
    func table() throws {
        let table = Rendering.table(try Fixtures.mixed(), now: now, timeZone: berlin)
        #expect(table == """
            ID        KIND   TITLE     STATE      NEXT              REPEATS
            7A7A0000  alarm  Nap over  alerting   now               once
            94DFECC6  timer  Tea       countdown  in 4:32           -
            26B098AD  timer  Pizza     paused     10:00 left        -
            11643830  alarm  Wake up   scheduled  tomorrow 07:00    mon,wed,fri
            5795D8CB  date   Presents  scheduled  2036-12-24 18:00  once
            """)
    }

    @Test("Pausing or resuming a countdown leaves it in its place: a second tap there must not reach another alarm")
    func pausedKeepsItsPlace() throws {
        let (eggs, laundry) = (UUID(), UUID())
        let running = try Fixtures.runningTimer(id: laundry, title: "Laundry", total: 600, remaining: 300)
        let order = { (documents: [AlarmDocument]) in Rendering.displayOrder(documents, now: now).map(\.id) }
        #expect(order([running, try Fixtures.runningTimer(id: eggs, title: "Eggs", total: 240, remaining: 180)]) == [eggs, laundry])
        #expect(order([running, try Fixtures.pausedTimer(id: eggs, title: "Eggs", total: 240, elapsed: 60)]) == [eggs, laundry])
        #expect(order([running, try Fixtures.pausedTimer(id: eggs, title: "Eggs", total: 600, elapsed: 60)]) == [laundry, eggs])
    }

    @Test("list warns of a configuration file the node could not use, of a damaged state file, and of alarms shown as due that wait for the node's clock to be synchronized")
    func listWarnings() throws {
        let due = try Fixtures.scheduledAlarm(id: UUID(), title: "Wake up", words: ["07:00"], nextAlert: "2026-11-22T06:59:00Z")
        let status = { (synchronized: Bool, problem: String?) in
            NodeStatus(state: "online", clockSynchronized: synchronized, stateFileProblem: problem)
        }
        let mixed = try Fixtures.mixed()
        #expect(Rendering.listWarnings(mixed + [due], status: status(true, nil), now: now).isEmpty)
        #expect(Rendering.listWarnings(mixed, status: status(false, nil), now: now).isEmpty)
        #expect(Rendering.listWarnings(mixed + [due], status: nil, now: now).isEmpty)
        let warnings = Rendering.listWarnings(mixed + [due], status: status(false, "alarms/x.json is damaged"), now: now)
        #expect(warnings.count == 2 && warnings[0] == "alarms/x.json is damaged")
        #expect(warnings.last?.hasPrefix("the node's clock is not synchronized: the alarms shown as due wait") == true)
        // A configuration file the node could not use comes first: the node does not run as the file says.
        let unusable = NodeStatus(state: "online", stateFileProblem: "alarms/x.json is damaged", configurationProblem: "alarmd.toml has 1 problem")
        #expect(Rendering.listWarnings(mixed, status: unusable, now: now) == ["alarmd.toml has 1 problem", "alarms/x.json is damaged"])
    }

    @Test("A narrow terminal shortens the titles")
    func narrowTable() throws {
        let long = try Fixtures.runningTimer(id: UUID(), title: "A very long title for a timer", total: 600, remaining: 60)
        let table = Rendering.table([long], now: now, timeZone: berlin, width: 60)
        #expect(table.split(separator: "\n").allSatisfy { $0.count <= 60 })
        #expect(table.contains("A very long t…  countdown"))
    }

    @Test("Wide titles (emoji, East Asian text, combining marks) keep the columns in line, also when cut")
    func wideTitles() throws {
        let titles = ["⏰ Wake", "お茶の時間", "Cafe\u{301} au lait", "🇩🇪 ❤\u{FE0F} Tea"]
        let timers = try titles.map { try Fixtures.runningTimer(id: UUID(), title: $0, total: 600, remaining: 60) }
        let lines = Rendering.table(timers, now: now, timeZone: berlin).split(separator: "\n")
        let stateColumns = lines.map { line in TerminalText.columns(line[..<line.range(of: lines[0] == line ? "STATE" : "countdown")!.lowerBound]) }
        #expect(Set(stateColumns).count == 1, "\(lines)")
        #expect(TerminalText.columns("お茶の時間") == 10 && TerminalText.columns("⏰ Wake") == 7 && TerminalText.columns("Cafe\u{301}") == 4)
        #expect(TerminalText.columns("🇩🇪") == 2 && TerminalText.columns("❤\u{FE0F}") == 2 && TerminalText.columns("❤") == 1)
        let narrow = Rendering.table([timers[1]], now: now, timeZone: berlin, width: 52)
        #expect(narrow.split(separator: "\n").allSatisfy { TerminalText.columns($0) <= 52 }, "\(narrow)")
        #expect(narrow.contains("お茶…   countdown"), "a wide character that does not fit leaves a space")
    }

    @Test("Control characters in a title can neither break the table nor reach the terminal")
    func controlCharactersInTitles() throws {
        let title = "Tea\ntime \u{1B}]0;owned\u{07}"
        let timer = try Fixtures.runningTimer(id: UUID(), title: title, total: 600, remaining: 60)
        let outputs = [Rendering.table([timer], now: now, timeZone: berlin), Rendering.details(timer, now: now, timeZone: berlin),
                       Rendering.summary(timer, now: now, timeZone: berlin)]
        for output in outputs {
            #expect(!output.unicodeScalars.contains { $0 != "\n" && $0.properties.generalCategory == .control }, "\(output)")
        }
        #expect(outputs[0].split(separator: "\n").count == 2)
        #expect(outputs[2].contains("\"Tea\u{FFFD}time \u{FFFD}]0;owned\u{FFFD}\""))
        #expect(try AlarmSelection.resolve(title, among: [timer]).id == timer.id)
    }

    @Test("show: every detail of one alarm")
    func details() throws {
        let tea = try Fixtures.mixed()[1]
        let details = Rendering.details(tea, now: now, timeZone: berlin)
        #expect(details == """
            id          94DFECC6-80EA-4FD9-AC4F-39A8D9A63F55
            kind        timer
            title       Tea
            state       countdown
            next        in 4:32
            group       - (this node's own)
            next alert  Sun 2026-11-22 08:04:32 \(berlin.abbreviation(for: now)!) (2026-11-22T07:04:32.000Z)
            countdown   4:32 of 10:00 left
            schedule    -
            pre-alert   10m
            snooze      10m
            sound       default
            buttons     Stop, Repeat (countdown)
            tint        #FF9500
            """)
        let wakeUp = Rendering.details(try Fixtures.mixed()[0], now: now, timeZone: berlin)
        #expect(wakeUp.contains("schedule    07:00 mon,wed,fri"))
        #expect(wakeUp.contains("snooze      9m"))
        var inHouse = tea
        inHouse.group = "house"
        #expect(Rendering.details(inHouse, now: now, timeZone: berlin).contains("group       house (scheduled through it: `--group house` reaches it)"))
    }

    @Test("One-line summaries after scheduling or an operation")
    func summaries() throws {
        let documents = try Fixtures.mixed()
        #expect(Rendering.summary(documents[0], now: now, timeZone: berlin)
            == "alarm 11643830 \"Wake up\": scheduled, tomorrow 07:00, repeats mon,wed,fri")
        #expect(Rendering.summary(documents[1], now: now, timeZone: berlin) == "timer 94DFECC6 \"Tea\": countdown, in 4:32")
        #expect(Rendering.summary(documents[3], now: now, timeZone: berlin) == "timer 26B098AD \"Pizza\": paused, 10:00 left")
    }

    @Test("Countdown clocks round up to the second", arguments: [
        (0.0, "0:00"), (4.2, "0:05"), (272, "4:32"), (600, "10:00"), (3723, "1:02:03"), (183_845, "2d 3:04:05"), (-3, "0:00"),
        (1e300, "∞"), // a paused timer's total as a retained document on the broker may give it
    ])
    func clocks(seconds: TimeInterval, text: String) {
        #expect(AlarmText.clock(seconds) == text)
    }

    @Test("Wall-clock times say today, tomorrow, a weekday, or the date")
    func wallClock() {
        func text(_ iso: String) -> String { AlarmText.wallClock(AlarmJSON.date(from: iso)!, now: now, timeZone: berlin) }
        #expect(text("2026-11-22T21:30:00Z") == "today 22:30")
        #expect(text("2026-11-22T23:30:00Z") == "tomorrow 00:30")
        #expect(text("2026-11-25T06:00:15Z") == "Wed 07:00:15")
        #expect(text("2026-11-29T06:00:00Z") == "2026-11-29 07:00")
    }

    @Test("list --json prints documents that read back as the node's")
    func listJSON() throws {
        let documents = Rendering.displayOrder(try Fixtures.mixed(), now: now)
        let decoded = try AlarmJSON.decoder.decode([AlarmDocument].self, from: Data(JSONOutput.pretty(documents).utf8))
        #expect(decoded == documents)
    }

    @Test("Operation results and failures in JSON")
    func operationJSON() throws {
        let tea = try Fixtures.mixed()[1]
        let results = [
            JSONOutput.operationResult(id: tea.id, result: .success(tea)),
            JSONOutput.operationResult(id: tea.id, result: .success(nil)),
            JSONOutput.operationResult(id: tea.id, result: .failure(.refused(.node(.invalidState("only an alerting alarm can be stopped"))))),
        ]
        let decoded = try JSONDecoder().decode([JSONValue].self, from: Data(JSONOutput.pretty(results).utf8))
        #expect(decoded == results)
        guard case .object(let failure) = decoded[2], case .object(let error)? = failure["error"] else {
            Issue.record("no error object")
            return
        }
        #expect(failure["ok"] == .bool(false))
        #expect(error["code"] == .string("invalidState"))
        #expect(error["exitStatus"] == .number(1))
        let document = try JSONValue(encoding: tea).decode(as: AlarmDocument.self)
        #expect(document == tea)
    }

    @Test("A failed command in JSON: code, message, exit status")
    func failureJSON() throws {
        let text = JSONOutput.pretty(JSONOutput.failure(.unreachable("node 'x' is offline")))
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(decoded == .object(["ok": .bool(false), "error": .object([
            "code": .string("unreachable"), "message": .string("node 'x' is offline"), "exitStatus": .number(3),
        ])]))
    }

    @Test("Errors from the node map to exit statuses scripts can rely on")
    func exitStatuses() {
        let id = UUID()
        #expect(AlarmctlError(.node(.notFound(id))).exitStatus == .notFound)
        #expect(AlarmctlError(.node(.unavailable("down"))).exitStatus == .unreachable)
        #expect(AlarmctlError(.node(.unauthorized(.denied))).exitStatus == .unauthorized)
        #expect(AlarmctlError(.node(.unauthorized(.denied))).message.contains("alarmctl authorize"))
        #expect(AlarmctlError(.node(.invalidState("no"))).exitStatus == .refused)
        #expect(AlarmctlError(.alarmKit(.maximumLimitReached)).exitStatus == .refused)
        #expect(AlarmctlError(.alarmKit(.maximumLimitReached)).code == "maximumLimitReached")
        #expect(AlarmctlError(.node(.invalidConfiguration(field: "configuration.schedule", reason: "bad"))).exitStatus == .refused)
        #expect(ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
    }
}
