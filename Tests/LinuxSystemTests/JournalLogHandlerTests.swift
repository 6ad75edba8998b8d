import Foundation
import Glibc
import Logging
import MosquittoTestSupport
import Testing
@testable import LinuxSystem

@Suite("JournalLogHandler")
struct JournalLogHandlerTests {
    /// `$JOURNAL_STREAM` as systemd would set it for this process's standard error.
    private func journalStreamOfStandardError() -> String {
        var status = stat()
        #expect(fstat(STDERR_FILENO, &status) == 0)
        return "\(status.st_dev):\(status.st_ino)"
    }

    @Test func anEntryCarriesEachMetadataKeyAsAFieldAndTheLevelAsPriority() throws {
        let directory = try TemporaryDirectory()
        let journal = try DatagramListener(address: directory.file("journal"))
        var handler = try #require(JournalLogHandler(
            label: "test.label", identifier: "alarmd",
            environment: ["JOURNAL_STREAM": journalStreamOfStandardError()], socketPath: directory.file("journal")))
        handler.metadata["node"] = "bedroom"
        let logger = Logger(label: "test.label") { _ in handler }

        logger.warning("GPIO opened", metadata: ["chip": "gpiochip0", "alarmID": "4F2A"])

        let fields = try journal.receive(within: .seconds(2)).split(separator: "\n").map(String.init)
        #expect(fields.contains("MESSAGE=GPIO opened alarmID=4F2A chip=gpiochip0 node=bedroom"))
        #expect(fields.contains("PRIORITY=4"))
        #expect(fields.contains("SYSLOG_IDENTIFIER=alarmd"))
        #expect(fields.contains("LOGGER=test.label"))
        #expect(fields.contains("CHIP=gpiochip0"))
        #expect(fields.contains("ALARMID=4F2A"))
        #expect(fields.contains("NODE=bedroom"))
        #expect(fields.contains { $0.hasPrefix("CODE_FILE=") && $0.hasSuffix("JournalLogHandlerTests.swift") })
    }

    @Test func withoutTheJournalOnStandardErrorThereIsNoHandler() throws {
        let directory = try TemporaryDirectory()
        _ = try DatagramListener(address: directory.file("journal"))
        #expect(JournalLogHandler(label: "x", identifier: "alarmd", environment: [:], socketPath: directory.file("journal")) == nil)
        #expect(JournalLogHandler(label: "x", identifier: "alarmd", environment: ["JOURNAL_STREAM": "1:2"], socketPath: directory.file("journal")) == nil)
        #expect(JournalLogHandler(
            label: "x", identifier: "alarmd", environment: ["JOURNAL_STREAM": journalStreamOfStandardError()],
            socketPath: directory.file("nobody-listens")) == nil)
    }

    @Test func aValueWithALineBreakIsSentWithItsLength() {
        let bytes = JournalLogHandler.encode([("A", "one"), ("B", "x\ny")])
        #expect(bytes == Array("A=one\nB\n".utf8) + [3, 0, 0, 0, 0, 0, 0, 0] + Array("x\ny\n".utf8))
    }

    @Test func keysBecomeFieldNamesTheJournalKeeps() {
        #expect(JournalLogHandler.fieldName("alarmID") == "ALARMID")
        #expect(JournalLogHandler.fieldName("time-zone") == "TIME_ZONE")
        #expect(JournalLogHandler.fieldName("_private") == "F_PRIVATE")
        #expect(JournalLogHandler.fieldName("9lives") == "F9LIVES")
        #expect(JournalLogHandler.priority(.critical) == 2 && JournalLogHandler.priority(.debug) == 7)
    }
}

@Suite("TerminalLogHandler")
struct TerminalLogHandlerTests {
    /// Milliseconds since the epoch of `CLOCK_REALTIME` now, rounded down.
    private func realtimeMilliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    @Test func theTimestampIsTheRealtimeClockToTheMillisecondInTheLocalZone() throws {
        let before = realtimeMilliseconds()
        let stamp = TerminalLogHandler.timestamp()
        let after = realtimeMilliseconds()
        let match = try #require(stamp.wholeMatch(of: /(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})([+-])(\d\d)(\d\d)/), "\(stamp)")
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday) = (Int32(match.1)! - 1900, Int32(match.2)! - 1, Int32(match.3)!)
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(match.4)!, Int32(match.5)!, Int32(match.6)!)
        let offset = (Int(match.9)! * 3600 + Int(match.10)! * 60) * (match.8 == "-" ? -1 : 1)
        let milliseconds = (timegm(&parts) - offset) * 1000 + Int(match.7)!
        #expect(before <= milliseconds && milliseconds <= after, "\(stamp) is not between \(before) and \(after) ms")
    }
}
