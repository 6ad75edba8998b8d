// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "alarmd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AlarmKit", targets: ["AlarmKit"]),
        .executable(name: "alarmd", targets: ["alarmd"]),
        .executable(name: "alarmctl", targets: ["alarmctl"]),
        .executable(name: "alarmd-bench", targets: ["alarmd-bench"]),
        .executable(name: "alarmd-companion", targets: ["alarmd-companion"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
    ],
    targets: [
        // MARK: Pure logic

        // The AlarmKit model, the engine (state machine, schedule math, limits), the in-process
        // AlarmManager, the MQTT protocol's types and the human syntax (alarmctl's and Home
        // Assistant's `10m Tea`). The model and the engine import no C module
        // and do no I/O; only the remote manager (Remote/) talks to a broker, through Mosquitto.
        .target(
            name: "AlarmKit",
            dependencies: [
                "Mosquitto",
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Buttons, buzzer patterns and LED modes, and the driver that plays them: no C, no GPIO.
        .target(
            name: "AlarmHardware",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),

        // MARK: Adapters, one per outside thing; each is the only importer of its C module

        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .target(
            name: "Mosquitto",
            dependencies: [
                "CMosquitto", "LinuxSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .target(
            name: "GPIO",
            dependencies: ["CGPIOD", "AlarmHardware", "LinuxSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // Linux headers Glibc's module lacks (timerfd, timex, inotify, eventfd, wcwidth).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // Wall-clock steps, clock sync, zone changes, atomic files, sd_notify, terminal widths.
        .target(
            name: "LinuxSystem",
            dependencies: ["CLinux", .product(name: "Logging", package: "swift-log")]
        ),

        // MARK: Wiring

        // The daemon's parts and the one builder that puts them together.
        .target(
            name: "AlarmNode",
            dependencies: [
                "AlarmKit", "AlarmHardware", "GPIO", "LinuxSystem", "Mosquitto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        .executableTarget(
            name: "alarmd",
            dependencies: [
                "AlarmNode", "AlarmKit", "LinuxSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Drives GPIO lines for the hardware-in-the-loop harness: a test tool, kept with it.
        .executableTarget(
            name: "gpio-probe",
            dependencies: ["GPIO", "AlarmHardware", .product(name: "Logging", package: "swift-log")],
            path: "Tests/HIL/gpio-probe"
        ),

        // The command line's logic (id prefixes, tables, the watch screen, the node session), and
        // its thin ArgumentParser main.
        .target(
            name: "AlarmctlCore",
            dependencies: [
                "AlarmKit", "LinuxSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "alarmctl",
            dependencies: ["AlarmctlCore", "AlarmKit", "LinuxSystem", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // The companion display (docs/companion.md): the page's view of the nodes, request checks,
        // sessions and the HTTP routes, testable without sockets; and its thin main.
        .target(
            name: "CompanionCore",
            dependencies: [
                "AlarmKit", "AlarmctlCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "alarmd-companion",
            dependencies: [
                "CompanionCore", "AlarmKit", "AlarmctlCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),

        // The benchmark of SPEC §9 (scripts/bench, docs/performance.md): the real daemon as a black
        // box against a real mosquitto, with baselines measured in the same run.
        .executableTarget(
            name: "alarmd-bench",
            dependencies: [
                "Mosquitto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Tests

        .target(
            name: "MosquittoTestSupport",
            dependencies: ["Mosquitto", .product(name: "Logging", package: "swift-log")],
            path: "Tests/MosquittoTestSupport"
        ),
        .testTarget(name: "AlarmKitTests", dependencies: ["AlarmKit", "MosquittoTestSupport"], resources: [.copy("Fixtures")]),
        // The examples of docs/porting.md, compiled so the document stays true.
        .testTarget(name: "PortingExamples", dependencies: ["AlarmKit"]),
        .testTarget(
            name: "MosquittoTests",
            dependencies: ["Mosquitto", "MosquittoTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "AlarmNodeTests", dependencies: ["AlarmNode", "AlarmKit", "AlarmHardware", "LinuxSystem", "MosquittoTestSupport"]),
        // The real alarmd process against a real mosquitto.
        .testTarget(
            name: "AlarmdTests",
            dependencies: ["AlarmKit", "AlarmNode", "Mosquitto", "MosquittoTestSupport", "alarmd"]
        ),
        // alarmctl's syntax and rendering, and the real alarmctl against a real alarmd and mosquitto.
        .testTarget(
            name: "AlarmctlTests",
            dependencies: ["AlarmctlCore", "AlarmKit", "LinuxSystem", "MosquittoTestSupport", "Mosquitto", "alarmctl", "alarmd"]
        ),
        .testTarget(
            name: "CompanionTests",
            dependencies: [
                "CompanionCore", "AlarmKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LinuxSystemTests",
            dependencies: ["LinuxSystem", "MosquittoTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "AlarmHardwareTests", dependencies: ["AlarmHardware", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "GPIOTests", dependencies: ["GPIO", "AlarmHardware", .product(name: "Logging", package: "swift-log")]),
    ],
    swiftLanguageModes: [.v6]
)
