import Testing
@testable import AlarmKit

@Suite("Group commit bookkeeping")
struct GroupCommitTests {
    let diskFull = AlarmManager.AlarmError.internal("disk full")

    @Test func oneWriteCoversEveryChangeNumberedBeforeItStarted() async throws {
        let commit = GroupCommit()
        let first = commit.numberChange(), second = commit.numberChange()
        #expect(commit.beginWrite() == second)
        #expect(commit.beginWrite() == nil, "one write at a time")
        let third = commit.numberChange()
        async let firstOutcome = commit.outcome(of: first)
        async let thirdOutcome = commit.outcome(of: third)
        // Let both waiters register; finishWrite then resumes the first only.
        while commit.waiterCount < 2 { await Task.yield() }
        #expect(commit.finishWrite(version: second, failure: nil), "the third change still needs a write")
        #expect(await firstOutcome == nil)
        #expect(commit.beginWrite() == third)
        #expect(!commit.finishWrite(version: third, failure: nil))
        #expect(await thirdOutcome == nil)
        #expect(await commit.outcome(of: second) == nil, "already saved: answered at once")
        #expect(commit.unsavedVersion == nil)
    }

    @Test func aFailedWriteAnswersItsChangesUntilALaterWriteSavesThem() async throws {
        let commit = GroupCommit()
        let change = commit.numberChange()
        #expect(commit.beginWrite() == change)
        #expect(!commit.finishWrite(version: change, failure: diskFull), "no reply waits: the next change retries")
        #expect(await commit.outcome(of: change) == diskFull, "a reply that asks late still hears of the failure")
        #expect(commit.unsavedVersion == change)
        let next = commit.numberChange()
        #expect(commit.beginWrite() == next)
        #expect(!commit.finishWrite(version: next, failure: nil))
        #expect(await commit.outcome(of: change) == nil, "saved with the next successful write")
    }

    @Test func aFailureWithRepliesStillWaitingAsksForAnotherWrite() async throws {
        let commit = GroupCommit()
        let first = commit.numberChange()
        #expect(commit.beginWrite() == first)
        let second = commit.numberChange()
        async let secondOutcome = commit.outcome(of: second)
        while commit.waiterCount < 1 { await Task.yield() }
        #expect(commit.finishWrite(version: first, failure: diskFull))
        #expect(commit.beginWrite() == second)
        #expect(!commit.finishWrite(version: second, failure: nil))
        #expect(await secondOutcome == nil)
    }
}
