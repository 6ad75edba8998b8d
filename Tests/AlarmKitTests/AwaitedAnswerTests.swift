import AlarmKit
import Testing

/// `AwaitedAnswer`: an answer before, during or after the wait, and a wait that ends at its
/// limit. The limit is a test-controlled sleep: nothing here waits for real time.
@Suite("Awaited answer", .timeLimit(.minutes(1)))
struct AwaitedAnswerTests {
    /// A sleep that lasts until the task is cancelled: the limit never passes.
    static let forever: @Sendable (Duration) async throws -> Void = { _ in
        try await Task.sleep(for: .seconds(86_400 * 365))
    }
    /// A sleep that ends at once: the limit has passed.
    static let atOnce: @Sendable (Duration) async throws -> Void = { _ in }

    @Test("An answer given before the wait starts is kept for it")
    func answerBeforeWait() async {
        let answer = AwaitedAnswer<Int>()
        #expect(answer.answer(7))
        #expect(!answer.answer(8), "a second answer is refused")
        #expect(await answer.wait(atMost: .seconds(1), sleep: Self.forever) == 7)
    }

    @Test("An answer given while the wait runs ends it")
    func answerDuringWait() async {
        let answer = AwaitedAnswer<String>()
        async let waited = answer.wait(atMost: .seconds(1), sleep: Self.forever)
        // Whether the waiter is suspended yet or not, the answer is accepted once and reaches it.
        #expect(answer.answer("yes"))
        #expect(await waited == "yes")
        #expect(!answer.answer("again"), "the wait is over")
    }

    @Test("The limit ends the wait with nil, and a later answer is refused")
    func limitPasses() async {
        let answer = AwaitedAnswer<Int>()
        #expect(await answer.wait(atMost: .seconds(30), sleep: Self.atOnce) == nil)
        #expect(!answer.answer(1), "nobody waits any more: the answer must be refused, so its giver knows")
    }

    @Test("An accepted answer is taken even when the limit has passed by the time the waiter looks")
    func acceptedAnswerIsNotLost() async {
        // The limit's end and the waiter race; many rounds make the losing order show up (it
        // did, in about 5 % of rounds, before the fix).
        var lost = 0
        for _ in 0..<500 {
            let answer = AwaitedAnswer<Int>()
            #expect(answer.answer(3))
            if await answer.wait(atMost: .zero, sleep: Self.atOnce) != 3 { lost += 1 }
        }
        #expect(lost == 0)
    }

    @Test("A sleep that fails ends the wait at once instead of leaving it open")
    func failingSleepEndsTheWait() async {
        struct ClockFailure: Error {}
        let answer = AwaitedAnswer<Int>()
        #expect(await answer.wait(atMost: .seconds(30)) { _ in throw ClockFailure() } == nil)
        #expect(!answer.answer(1))
    }

    @Test("Cancelling the waiting task ends the wait with nil")
    func cancellation() async {
        let answer = AwaitedAnswer<Int>()
        let waiting = Task { await answer.wait(atMost: .seconds(30), sleep: Self.forever) }
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(!answer.answer(1))
    }
}
