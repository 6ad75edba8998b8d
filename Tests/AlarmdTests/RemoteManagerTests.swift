import AlarmKit
import Foundation
import MosquittoTestSupport
import Testing

/// AlarmKit's remote `AlarmManager` against a real alarmd.
@Suite("Remote AlarmManager", .serialized)
struct RemoteManagerTests {
    struct CookingData: AlarmMetadata {
        enum Method: String, Codable { case frying, grilling }
        let method: Method
    }

    private func manager(for broker: TestBroker, node: String) -> (AlarmManager, RemoteNodeConnection) {
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: broker.host, port: broker.port, node: node))
        return (AlarmManager(connection: connection), connection)
    }

    @Test("The cooking timer runs end to end: schedule, alert, Repeat, cancel")
    func cookingTimer() async throws {
        try await withDaemon { broker, daemon, _ in
            let (manager, connection) = manager(for: broker, node: daemon.node)
            defer { Task { await connection.close() } }
            let attributes = AlarmAttributes(
                presentation: AlarmPresentation(
                    alert: .init(title: "Food Ready!", stopButton: .init(text: "Dismiss", textColor: .white, systemImageName: "stop.circle"),
                                 secondaryButton: .init(text: "Repeat", textColor: .white, systemImageName: "repeat.circle"),
                                 secondaryButtonBehavior: .countdown),
                    countdown: .init(title: "Cooking"), paused: .init(title: "Paused", resumeButton: .init(text: "Resume", textColor: .green, systemImageName: "play"))),
                metadata: CookingData(method: .frying), tintColor: .green)
            let id = UUID()
            let configuration = AlarmManager.AlarmConfiguration(
                countdownDuration: .init(preAlert: 1, postAlert: 1), attributes: attributes)
            let alarm = try await manager.schedule(id: id, configuration: configuration)
            #expect(alarm.state == .countdown)
            for await alarms in manager.alarmUpdates where alarms.first(where: { $0.id == id })?.state == .alerting { break }
            try await manager.countdown(id: id)
            let documents = try await manager.fetchAlarmDocuments()
            #expect(documents.first?.state == .countdown)
            #expect(documents.first?.configuration.attributes.metadata == .object(["method": .string("frying")]))
            try await manager.cancel(id: id)
            for await alarms in manager.alarmUpdates where alarms.isEmpty { break }
            await #expect(throws: AlarmManager.AlarmError.notFound(id)) { try await manager.stop(id: id) }
        }
    }

    @Test("Two remote observers of alarmUpdates both see the change")
    func twoObservers() async throws {
        try await withDaemon { broker, daemon, _ in
            let (first, firstConnection) = manager(for: broker, node: daemon.node)
            let (second, secondConnection) = manager(for: broker, node: daemon.node)
            defer { Task { await firstConnection.close(); await secondConnection.close() } }
            async let seenByFirst: Void = { for await alarms in first.alarmUpdates where alarms.count == 1 { return } }()
            async let seenBySecond: Void = { for await alarms in second.alarmUpdates where alarms.count == 1 { return } }()
            firstConnection.start()
            secondConnection.start()
            let attributes = AlarmAttributes<RemoteManagerTests.CookingData>(
                presentation: .init(alert: .init(title: "Tea", stopButton: .init(text: "OK", textColor: .white, systemImageName: "stop"))),
                tintColor: .blue)
            try await first.schedule(id: UUID(), configuration: .timer(duration: 600, attributes: attributes))
            _ = await (seenByFirst, seenBySecond)
            #expect(try second.alarms.count == 1)
            #expect(second.authorizationState == .authorized)
        }
    }

    @Test("An unreachable broker gives an error that says what to do")
    func unreachable() async throws {
        let port = try TestBroker.freePort()
        let connection = RemoteNodeConnection(settings: RemoteNodeSettings(host: "127.0.0.1", port: port, node: "nowhere", timeout: .seconds(1)))
        let manager = AlarmManager(connection: connection)
        let error = await #expect(throws: AlarmManager.AlarmError.self) { try await manager.pause(id: UUID()) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("ALARMD_BROKER") == true)
        await connection.close()
    }

    @Test("The environment names the node and broker")
    func environment() {
        let settings = RemoteNodeSettings.fromEnvironment(["ALARMD_BROKER": "10.0.0.5:1884", "ALARMD_NODE": "kitchen"])
        #expect(settings.host == "10.0.0.5" && settings.port == 1884 && settings.node == "kitchen")
        #expect(RemoteNodeSettings.parseBroker("broker.local")! == ("broker.local", 1883))
        #expect(RemoteNodeSettings.parseBroker("[::1]:1885")! == ("::1", 1885))
        #expect(RemoteNodeSettings.parseBroker("host:notaport") == nil)
    }
}
