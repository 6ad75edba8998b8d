// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "alarmd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AlarmKit", targets: ["AlarmKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The AlarmKit model, the engine (state machine, schedule math, limits) and the
        // in-process AlarmManager. Pure logic: no C module, no I/O.
        .target(
            name: "AlarmKit",
            dependencies: [
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AlarmKitTests",
            dependencies: ["AlarmKit"],
            resources: [.copy("Fixtures")]
        ),
        // Linux headers Glibc's module lacks (timerfd, timex, inotify, eventfd).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // Adapters to the kernel: wall-clock steps, clock sync, zone changes, atomic files, sd_notify.
        .target(
            name: "LinuxSystem",
            dependencies: [
                "CLinux",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LinuxSystemTests",
            dependencies: [
                "LinuxSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The examples of docs/porting.md, compiled so the document stays true.
        .testTarget(
            name: "PortingExamples",
            dependencies: ["AlarmKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
