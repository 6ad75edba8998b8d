// The libFuzzer target: scripts/fuzz builds this package with -sanitize=fuzzer,address and runs it
// on Tests/Fuzz/corpus. The checks are FuzzCorpusTests', from one file both use
// (CommandInputCheck.swift, a link to Tests/AlarmKitTests'): a violation or a trap is a crash
// that libFuzzer keeps.

import Glibc

/// libFuzzer's entry for a program with a main of its own (SwiftPM links every executable's main
/// itself): declared by hand, as no module map exports it. Its arguments are C's.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    let violations = commandInputViolations(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    if !violations.isEmpty { fatalError(violations.joined(separator: "; ")) }
    return 0
})
