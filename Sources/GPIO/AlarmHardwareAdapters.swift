import AlarmHardware
import Logging

/// A GPIO output drives the buzzer or the LED.
extension GPIOOutput: OutputLine {}

/// The stop and (optional) snooze buttons on GPIO inputs, as raw
/// ``ButtonEdge``s with the kernel's timestamps. Request the inputs
/// active-low when pressing pulls the line to ground, so that `pressed` is
/// `true` while held.
public struct GPIOButtons: ButtonEdgeSource {
    public typealias Element = ButtonEdge
    public typealias Failure = any Error

    private let lines: [(button: Button, input: GPIOInput)]
    private let events: GPIOEdgeEvents

    public init(stop: GPIOInput, snooze: GPIOInput?, logger: Logger) {
        var lines: [(button: Button, input: GPIOInput)] = [(.stop, stop)]
        if let snooze { lines.append((.snooze, snooze)) }
        self.lines = lines
        self.events = GPIOEdgeEvents(inputs: lines.map(\.input), logger: logger)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate var events: AsyncThrowingStream<GPIOEdgeEvent, any Error>.Iterator
        fileprivate let lines: [(button: Button, input: GPIOInput)]

        public mutating func next() async throws -> ButtonEdge? {
            while let event = try await events.next() {
                guard let line = lines.first(where: { $0.input === event.input }) else { continue }
                return ButtonEdge(button: line.button, pressed: event.rising, timestamp: event.timestamp)
            }
            return nil
        }
    }

    /// Starts the event thread (see ``GPIOEdgeEvents``).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(events: events.makeAsyncIterator(), lines: lines)
    }
}
