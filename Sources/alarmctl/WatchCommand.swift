import AlarmKit
import AlarmctlCore
import ArgumentParser
import Dispatch
import Foundation
import Glibc

extension Alarmctl {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every alarm live: countdowns with progress bars, states, alerts, events.",
            discussion: """
                Follows the node's retained topics and events; it never polls the node. The screen
                fits the terminal's width and redraws each second for the countdowns. Ctrl-C quits.

                Not on a terminal, it prints a plain frame on each change. With --json it prints one
                JSON object per line for each change: {"alarms":[…]}, {"event":{…}}, {"status":{…}}
                or {"connectionProblem":"…"}.
                """)

        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            try await output.run { () async throws(AlarmctlError) in
                try await connection.withSession { session throws(AlarmctlError) in
                    // Fails fast when the broker or the node cannot be found; an offline node is shown as such.
                    let status = try await session.status()
                    let mode: WatchDisplay.Mode = output.json ? .json : Terminal.isInteractive ? .terminal : .plain
                    await WatchDisplay(session: session, status: status, mode: mode).run()
                }
                return nil
            }
        }
    }
}

/// Draws `alarmctl watch` from the session's streams until a quit signal.
actor WatchDisplay {
    enum Mode { case terminal, plain, json }

    private let session: NodeSession
    private let mode: Mode
    private var state: WatchState

    /// Starts from `status` and the alarms already received from the retained topics.
    init(session: NodeSession, status: NodeStatus, mode: Mode) {
        self.session = session
        self.mode = mode
        self.state = WatchState(node: session.settings.node, status: status, documents: session.connection.documentUpdates.value)
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP; the terminal is restored on the way out.
    func run() async {
        let watcher = SignalWatcher([SIGINT, SIGTERM, SIGHUP, SIGWINCH])
        if mode == .terminal { Terminal.write(ANSI.enterAlternateScreen + ANSI.hideCursor) } else { Terminal.exitWhenReaderLeaves() }
        if mode != .json { draw() }
        let connection = session.connection
        let problems = session.connectionProblems
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await documents in connection.documentUpdates.stream() {
                    await self.update(json: ["alarms": documents]) { $0.documents = documents; $0.connectionProblem = nil }
                }
            }
            group.addTask {
                for await event in connection.events() { await self.update(json: ["event": event]) { $0.record(event) } }
            }
            group.addTask {
                for await case let status? in connection.statusUpdates.stream() {
                    await self.update(json: ["status": status]) { $0.status = status; $0.connectionProblem = nil }
                }
            }
            group.addTask {
                for await case let problem? in problems.stream() {
                    await self.update(json: ["connectionProblem": problem]) { $0.connectionProblem = problem }
                }
            }
            if mode == .terminal {
                group.addTask {
                    // Redraws on each second of the wall clock, for the countdowns' text.
                    while !Task.isCancelled {
                        let now = Date().timeIntervalSince1970
                        try? await Task.sleep(for: .seconds(now.rounded(.up) - now + 0.005))
                        await self.draw()
                    }
                }
            }
            group.addTask {
                for await number in watcher.signals {
                    guard number == SIGWINCH else { return }
                    await self.draw()
                }
            }
            // The first child to end is the signal watcher: the others run until cancelled.
            await group.next()
            group.cancelAll()
        }
        watcher.cancel()
        if mode == .terminal { Terminal.write(ANSI.showCursor + ANSI.leaveAlternateScreen) }
    }

    /// Applies a change; JSON mode prints every update, the screen redraws when something changed.
    private func update(json value: [String: some Encodable], _ change: (inout WatchState) -> Void) {
        let before = state
        change(&state)
        if mode == .json { Terminal.write(JSONOutput.line(value) + "\n") } else if state != before { draw() }
    }

    private func draw() {
        let width = Terminal.columns
        let lines = WatchScreen.render(state, now: Date(), timeZone: session.displayTimeZone, width: width, onTerminal: mode == .terminal)
        switch mode {
        case .terminal:
            Terminal.write(ANSI.home + lines.joined(separator: ANSI.clearToEndOfLine + "\n") + ANSI.clearToEndOfLine + ANSI.clearToEndOfScreen)
        case .plain:
            Terminal.write(lines.joined(separator: "\n") + "\n\n")
        case .json:
            break
        }
    }
}

/// The escape sequences `watch` uses.
enum ANSI {
    static let enterAlternateScreen = "\u{1B}[?1049h"
    static let leaveAlternateScreen = "\u{1B}[?1049l"
    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"
    static let home = "\u{1B}[H"
    static let clearToEndOfLine = "\u{1B}[K"
    static let clearToEndOfScreen = "\u{1B}[J"
}

/// Delivers signals as a stream instead of killing the process, until cancelled.
///
/// `@unchecked Sendable`: the dispatch sources are created in `init` and only cancelled
/// afterwards, and dispatch sources are thread-safe.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let continuation: AsyncStream<Int32>.Continuation
    let signals: AsyncStream<Int32>

    init(_ numbers: [Int32]) {
        (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        let continuation = self.continuation
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    /// Stops watching; the signals get their default actions back.
    func cancel() {
        for source in sources { source.cancel() }
        continuation.finish()
        for source in sources { signal(Int32(source.handle), SIG_DFL) }
    }
}
