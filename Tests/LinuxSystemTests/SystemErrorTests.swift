import Glibc
import Testing
@testable import LinuxSystem

@Suite("SystemError")
struct SystemErrorTests {
    @Test func namesTheErrnoAndSaysWhatFailedAndWhatToDo() {
        let error = SystemError(code: ENOSPC, action: "writing /var/lib/alarmd/state.json", subject: "/var/lib/alarmd")
        #expect(error.codeName == "ENOSPC")
        #expect(error.message == "writing /var/lib/alarmd/state.json failed: No space left on device; the disk is full: free space on the file system holding /var/lib/alarmd")
        #expect(error.description.hasSuffix("[ENOSPC (28)]"))
    }

    @Test func aSpecificRemedyReplacesTheGenericOne() {
        let error = SystemError(code: EIO, action: "reading the timer", remedy: "restart the daemon")
        #expect(error.message == "reading the timer failed: Input/output error; restart the daemon")
    }

    @Test func anUnknownCodeIsStillNamed() {
        #expect(SystemError(code: 4000, action: "testing").codeName == "errno 4000")
    }

    @Test func theFunnelRetriesInterruptedCallsAndThrowsOtherFailures() throws {
        var attempts = 0
        let result = try systemCall("testing") { () -> Int32 in
            attempts += 1
            if attempts == 1 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(attempts == 2)

        let error = #expect(throws: SystemError.self) {
            try systemCall("opening the test file", subject: "/nowhere") { () -> Int32 in
                errno = EACCES
                return -1
            }
        }
        #expect(error?.code == EACCES)
        #expect(error?.message.hasPrefix("opening the test file failed: Permission denied; give the daemon's user access to /nowhere") == true)
    }
}
