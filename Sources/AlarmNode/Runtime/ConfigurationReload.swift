import AlarmKit
import FoundationEssentials
import LinuxSystem
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Where the node's time zone comes from: the configuration (fixed) or the system (followed).
final class TimeZoneSource: Sendable {
    /// The configured zone, or nil when the system's zone is followed.
    let configuredZone: Mutex<String?>

    init(configured: String?) { configuredZone = Mutex(configured) }

    var currentZone: String { configuredZone.withLock { $0 } ?? SystemTimeZone.identifier() }
}

/// Reads the configuration again on SIGHUP. The time zone takes effect at once (relative schedules
/// are re-read); other changes are logged as needing a restart, settings a command-line flag overrides as such.
struct ConfigurationReloadService: Service {
    /// Made before any service runs: SIGHUP's default action ends the process, and systemd hears
    /// READY=1 (and may send it) as soon as the services start.
    let hangups: UnixSignalsSequence
    let reload: @Sendable () throws -> (file: NodeConfiguration, inForce: NodeConfiguration)
    let running: NodeConfiguration
    let timeZone: TimeZoneSource
    let node: LocalAlarmNode
    let bridge: MQTTBridge
    let logger: Logger

    func run() async throws {
        for await _ in hangups.cancelOnGracefulShutdown() {
            logger.notice("SIGHUP: reading the configuration again")
            let file: NodeConfiguration, configuration: NodeConfiguration
            do { (file, configuration) = try reload() } catch {
                logger.error("configuration not reloaded; keeping the running one", metadata: ["error": "\(error)"])
                continue
            }
            timeZone.configuredZone.withLock { $0 = configuration.node.timeZone }
            let name = timeZone.currentZone  // shown as configured: Foundation calls UTC GMT
            if let zone = TimeZone(identifier: name) {
                await node.changeTimeZone(to: zone)
                bridge.updateStatus { $0.timeZone = name }
                logger.info("time zone in force", metadata: ["timeZone": "\(name)"])
            }
            var others = configuration
            others.node.timeZone = running.node.timeZone
            let changed = [("node", others.node == running.node), ("broker", others.broker == running.broker),
                           ("limits", others.limits == running.limits), ("hardware", others.hardware == running.hardware),
                           ("intents", others.intents == running.intents), ("home-assistant", others.homeAssistant == running.homeAssistant)]
                .filter { !$0.1 }.map(\.0)
            if !changed.isEmpty {
                logger.warning("configuration changed beyond the time zone: restart alarmd to apply it", metadata: ["sections": "\(changed.joined(separator: ","))"])
            }
            let overridden = configuration.overrides(of: file)
            if !overridden.isEmpty {
                logger.warning("alarmd's command line overrides these settings of the file: to use the file's, remove those flags from it (systemctl edit alarmd, ExecStart=), then restart alarmd",
                               metadata: ["overridden": "\(overridden.joined(separator: "; "))"])
            }
        }
    }
}
