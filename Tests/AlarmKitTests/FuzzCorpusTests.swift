import Foundation
import Testing

/// The inputs libFuzzer found interesting (Tests/Fuzz/corpus: each added coverage, and every crash
/// it ever found, kept as `crash-*`), run through the fuzz target's checks on every test run.
@Suite("Fuzz corpus as regression tests")
struct FuzzCorpusTests {
    static let corpus = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../Fuzz/corpus").standardized

    @Test("Every kept input passes the checks of the fuzz target")
    func corpusHolds() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 20, "the corpus in \(Self.corpus.path) looks lost")
        for file in files {
            let violations = commandInputViolations(Array(try Data(contentsOf: file)))
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }

    @Test("A valid schedule, bytes that are not JSON and an empty input pass the checks")
    func checksCanFail() {
        // A schedule decoded and accepted: no violation. A payload that is not JSON: rejected with a message.
        let schedule = Array(##"{"configuration":{"countdownDuration":{"preAlert":60},"attributes":{"presentation":{"alert":{"title":"Tea"}},"tintColor":"#FF0000"}}}"##.utf8)
        #expect(commandInputViolations([0] + schedule).isEmpty)
        #expect(commandInputViolations([0, 0xFF, 0xFE]).isEmpty)
        #expect(commandInputViolations([]).isEmpty)
    }
}
