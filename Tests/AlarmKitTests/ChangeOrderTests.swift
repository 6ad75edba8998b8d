import Foundation
import MosquittoTestSupport
import Synchronization
import Testing
@testable import AlarmKit

/// The order in which a node hands a change to its delegate: the outputs first.
@Suite("What a change does first")
struct ChangeOrderTests {
    /// Records each call by name, in the order the calls begin.
    final class OrderRecorder: AlarmNodeDelegate {
        let calls = Mutex<[String]>([])

        func show(_ engine: AlarmEngine) {
            calls.withLock { $0.append(engine.alerting.isEmpty ? "show" : "show alerting") }
        }

        func persist(_ state: NodeState) throws {
            calls.withLock { $0.append("persist") }
        }

        func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
            calls.withLock { $0.append("perform") }
        }
    }

    @Test("An alert reaches the outputs before its write starts and before it is published")
    func alertShownFirst() async throws {
        let clock = ManualAlarmClock(now: date("2026-11-22T10:00:00Z"))
        let recorder = OrderRecorder()
        var before = 0
        try await alertOneTimer(clock: clock, manual: clock, delegate: recorder,
                                beforeAlert: { before = recorder.calls.withLock { $0.count } },
                                afterAlert: { node in #expect(await node.flush() == nil) })
        let calls = recorder.calls.withLock { Array($0[before...]) }
        #expect(calls.first == "show alerting", "calls: \(calls)")
        #expect(calls.contains("persist") && calls.contains("perform"), "calls: \(calls)")
    }
}
