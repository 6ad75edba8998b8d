import AlarmKit
import AlarmctlCore
import ArgumentParser
import CompanionCore
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

@main
struct Companion: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alarmd-companion",
        abstract: "Serve a web page that shows the alarms of alarmd nodes live and controls them.",
        discussion: """
            Examples:
              alarmd-companion --broker 127.0.0.1:1883
              alarmd-companion --node kitchen --node bedroom
              alarmd-companion --listen 0.0.0.0:8080 --password-file /etc/alarmd/companion-password

            The broker options and ALARMD_BROKER, ALARMD_PREFIX, ALARMD_USERNAME, ALARMD_PASSWORD,
            ALARMD_CA_FILE and ALARMD_BROKER_PROTOCOL are alarmctl's. Without --node it shows every
            node under the prefix. It listens on 127.0.0.1:8080; any other address needs
            --password-file. More in docs/companion.md.
            """,
        version: AlarmdVersion.current)

    @OptionGroup var brokerOptions: BrokerOptions

    @Option(help: ArgumentHelp("A node to show (repeatable; default: every node under the prefix).", valueName: "id"))
    var node: [String] = []

    @Option(help: ArgumentHelp("Where the page is served (port 0 picks a free one).", valueName: "host:port"))
    var listen = CompanionLaunch.defaultListen

    @Option(name: .customLong("password-file"), help: ArgumentHelp(
        "A file whose first line is the password the page asks for (required with an address other than loopback).",
        valueName: "file"))
    var passwordFile: String?

    @Flag(help: "Log the MQTT clients and the HTTP server at debug level.")
    var verbose = false

    func run() async throws {
        let launch: CompanionLaunch
        let settings: RemoteNodeSettings
        do {
            launch = try CompanionLaunch(listen: listen, passwordFile: passwordFile)
            for id in node where !NodeTopics.isValidNodeID(id) {
                throw CompanionError.usage("--node '\(id)' is not a node id: use letters, digits, '_' and '-' (at most 64)")
            }
            // The node is chosen by --node (or every node), never by ALARMD_NODE.
            var environment = ProcessInfo.processInfo.environment
            environment["ALARMD_NODE"] = node.first ?? "companion"
            settings = try brokerOptions.settings(environment: environment)
        } catch let error as AlarmctlError {
            throw ValidationError(error.message)
        } catch let error as CompanionError { throw ValidationError(error.message) }

        var logger = Logger(label: "alarmd-companion")
        logger.logLevel = verbose ? .debug : .info
        let fleet = RemoteFleet(settings: settings, nodes: node, logger: logger)
        do {
            try fleet.start()
        } catch { throw ValidationError(error.message) }
        let hub = CompanionHub(broker: "\(settings.host):\(settings.port)")
        let control = FleetControl(fleet: fleet)
        let server = CompanionServer(hub: hub, access: CompanionAccess(password: launch.password), control: control)
        let host = launch.host.contains(":") ? "[\(launch.host)]" : launch.host
        let application = Application(
            router: server.router(),
            configuration: .init(address: .hostname(launch.host, port: launch.port), serverName: "alarmd-companion"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? launch.port
                let anywhere = ["0.0.0.0", "::"].contains(launch.host) ? ", on every address of this machine: open http://<its name or address>:\(port)/" : ""
                let line = "alarmd-companion: serving http://\(host):\(port)/\(anywhere) (nodes from broker \(settings.host):\(settings.port))\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            },
            logger: logger)
        // Shut down in reverse order: the fleet first, which ends the pages' event streams, so
        // that the HTTP server's graceful shutdown does not wait for them.
        let group = ServiceGroup(configuration: .init(
            services: [application, FleetService(fleet: fleet, control: control, hub: hub)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            // NIO's own text names its bind call: say which address, and what to do (without the
            // usage, which ArgumentParser adds to a ValidationError: the command line was right).
            FileHandle.standardError.write(Data("Error: \(host):\(launch.port) is in use by another program (another alarmd-companion?): stop it, or give --listen another port\n".utf8))
            throw ExitCode(64)
        }
    }
}

/// Follows the fleet's nodes into the hub until shutdown, then disconnects and ends the streams.
struct FleetService: Service {
    let fleet: RemoteFleet
    let control: FleetControl
    let hub: CompanionHub

    func run() async throws {
        let following = Task { await hub.follow(fleet) }
        try? await gracefulShutdown()
        hub.finish()
        await fleet.close()
        await control.close()
        following.cancel()
    }
}
