import AlarmKit
import AlarmctlCore
import Foundation
import Testing

@Suite("watch: the screen as text")
struct WatchScreenTests {
    @Test("Times stay in the node's zone while it is offline: its offline status names no zone")
    func zoneKeptWhileOffline() async {
        let session = NodeSession(settings: RemoteNodeSettings(host: "127.0.0.1", port: 1, node: "bedroom"))
        let zone = TimeZone.current.identifier == "America/New_York" ? "Asia/Tokyo" : "America/New_York"
        session.connection.statusUpdates.send(NodeStatus(state: "online", since: Date(), timeZone: zone))
        #expect(session.displayTimeZone.identifier == zone)
        session.connection.statusUpdates.send(.offline(since: Date()))
        #expect(session.displayTimeZone.identifier == zone)
        await session.close()
    }

    let now = Fixtures.now
    let berlin = Fixtures.berlin

    func state() throws -> WatchState {
        var state = WatchState(
            node: "bedroom",
            status: NodeStatus(state: "online", timeZone: "Europe/Berlin", clockSynchronized: true),
            documents: try Fixtures.mixed())
        state.record(AlarmEvent(.missed, alarmID: Fixtures.id("0DD00000-1111-4222-8333-444455556666"), at: now.addingTimeInterval(-8),
                                details: ["late": .number(1200), "alertDate": .string("2026-11-22T06:39:52.000Z"), "title": .string("Work")]))
        state.record(AlarmEvent(.alerting, alarmID: Fixtures.id("7A7A0000-1111-4222-8333-444455556666"), at: now.addingTimeInterval(-5),
                                details: ["late": .number(0)]))
        state.record(AlarmEvent(.button, alarmID: nil, at: now.addingTimeInterval(-2),
                                details: ["button": .string("snooze"), "press": .string("short")]))
        return state
    }

    @Test("Every line fits the terminal's width", arguments: [20, 40, 60, 80, 132])
    func fitsWidth(width: Int) throws {
        let lines = WatchScreen.render(try state(), now: now, timeZone: berlin, width: width, onTerminal: true)
        for line in lines {
            #expect(line.withoutEscapes.count <= width, "\(line.withoutEscapes)")
        }
    }

    @Test("Countdowns get a progress bar and their time left; alerts a hint; events the latest first")
    func content() throws {
        let lines = WatchScreen.render(try state(), now: now, timeZone: berlin, width: 100, onTerminal: false)
        #expect(lines[0].hasPrefix("node bedroom · online · Europe/Berlin · 5 alarms"))
        #expect(lines[0].hasSuffix("08:00:00"))
        let tea = try #require(lines.first { $0.contains("Tea") })
        #expect(tea.contains("countdown  in 4:32"))
        #expect(tea.contains("█") && tea.hasSuffix(" 54%"))
        let pizza = try #require(lines.first { $0.contains("Pizza") })
        #expect(pizza.contains("10:00 left") && pizza.hasSuffix(" 33%"))
        let nap = try #require(lines.first { $0.contains("Nap over") })
        #expect(nap.contains("alerting") && nap.hasSuffix("alarmctl stop|snooze 7A7A0000"))
        let events = lines.filter { $0.hasPrefix("07:59:") }
        #expect(events == ["07:59:58  button         snooze  short press", "07:59:55  alerting       7A7A0000  Nap over",
                           "07:59:52  missed         0DD00000  Work  alertDate 2026-11-22T06:39:52.000Z  late 20m"], "a missed alarm named by its event")
        #expect(!lines.joined().contains("\u{1B}"))
        #expect(!lines.contains("Ctrl-C quits"), "piped frames have nothing to quit with Ctrl-C")
        let screen = WatchScreen.render(try state(), now: now, timeZone: berlin, width: 100, onTerminal: true)
        #expect(screen.last?.withoutEscapes == "Ctrl-C quits")
    }

    @Test("An event's fields, anyone's to publish, cannot drive the terminal")
    func eventFieldsArePrintable() throws {
        var state = try state()
        state.record(AlarmEvent(.button, alarmID: nil, at: now, details: ["button": .string("\u{1B}[2J"), "press": .string("x\u{7}")]))
        state.record(AlarmEvent(.stopped, alarmID: nil, at: now, details: ["source": .string("\u{1B}]0;owned\u{7}"), "\u{1B}[31m": .bool(true)]))
        let lines = WatchScreen.render(state, now: now, timeZone: berlin, width: 200, onTerminal: false)
        #expect(!lines.joined().unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(lines)")
    }

    @Test("An event keeps its alarm's title after the alarm is gone")
    func titlesOutliveTheirAlarms() throws {
        var state = try state()
        state.documents = []
        let lines = WatchScreen.render(state, now: now, timeZone: berlin, width: 100, onTerminal: false)
        #expect(lines.contains("07:59:55  alerting       7A7A0000  Nap over"))
    }

    @Test("Narrow, the id goes first; at 40 columns the time left is whole")
    func narrow() throws {
        let wide = WatchScreen.render(try state(), now: now, timeZone: berlin, width: 100, onTerminal: false)
        #expect(try #require(wide.first { $0.contains("Tea") }).hasPrefix("94DFECC6  "))
        for width in [40, 60] {
            let lines = WatchScreen.render(try state(), now: now, timeZone: berlin, width: width, onTerminal: false)
            let tea = try #require(lines.first { $0.contains("Tea") }, "width \(width)")
            #expect(!tea.contains("94DFECC6"), "width \(width): \(tea)")
            #expect(tea.contains("in 4:32"), "width \(width): \(tea)")
        }
        let sixty = WatchScreen.render(try state(), now: now, timeZone: berlin, width: 60, onTerminal: false)
        #expect(try #require(sixty.first { $0.contains("Tea") }).contains("█"), "a bar before an id")
    }

    @Test("Alerts, an offline node and a broker problem are highlighted")
    func highlights() throws {
        var state = try state()
        state.status = .offline(since: now)
        state.connectionProblem = "lost the connection to broker 127.0.0.1:1883"
        let lines = WatchScreen.render(state, now: now, timeZone: berlin, width: 100, onTerminal: true)
        let alert = "\u{1B}[1;97;41m"
        #expect(lines[0].hasPrefix(alert) && lines[0].contains("OFFLINE"))
        #expect(lines[1] == "\(alert)broker: lost the connection to broker 127.0.0.1:1883\u{1B}[0m")
        #expect(try #require(lines.first { $0.contains("Nap over") }).contains("\(alert)alerting"))
    }

    @Test("With no alarms the screen says so")
    func empty() {
        let lines = WatchScreen.render(WatchState(node: "n"), now: now, timeZone: berlin, width: 80, onTerminal: false)
        #expect(lines.contains("no alarms"))
        #expect(lines[0].contains("status unknown"))
    }

    @Test("Progress bars are exact to an eighth of a cell", arguments: [
        (0.0, 3, "░░░"), (1.0, 4, "████"), (0.5, 10, "█████░░░░░"), (0.55, 10, "█████▌░░░░"), (0.01, 10, "▏░░░░░░░░░"), (2.0, 2, "██"),
    ])
    func bars(fraction: Double, width: Int, bar: String) {
        #expect(WatchScreen.bar(fraction: fraction, width: width) == bar)
    }

    @Test("The screen keeps the latest events only")
    func eventsKept() {
        var state = WatchState(node: "n")
        for second in 0..<10 { state.record(AlarmEvent(.scheduled, alarmID: nil, at: Date(timeIntervalSince1970: Double(second)))) }
        #expect(state.events.count == WatchState.eventsKept)
        #expect(state.events.last?.at == Date(timeIntervalSince1970: 9))
    }
}
