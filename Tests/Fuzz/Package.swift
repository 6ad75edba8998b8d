// swift-tools-version:6.0
// The libFuzzer target for alarmd's command decoder and validation, a package of its own so that
// its flags (-sanitize=fuzzer,address) never reach the main build. Build and run
// it with scripts/fuzz (docs/reliability.md, "Coverage-guided fuzzing").
import PackageDescription

let package = Package(
    name: "alarmd-fuzz",
    dependencies: [.package(name: "alarmd", path: "../..")],
    targets: [
        .executableTarget(
            name: "CommandFuzzer",
            dependencies: [.product(name: "AlarmKit", package: "alarmd")],
            path: ".",
            // CommandInputCheck.swift links to the test target's copy, which FuzzCorpusTests use.
            sources: ["main.swift", "CommandInputCheck.swift"]
        ),
    ]
)
