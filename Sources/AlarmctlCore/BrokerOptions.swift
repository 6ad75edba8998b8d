import ArgumentParser

/// The broker options that alarmctl and alarmd-companion share, each over its environment
/// variable (``settings(node:timeout:environment:)`` reads both).
public struct BrokerOptions: ParsableArguments, Sendable {
    @Option(help: ArgumentHelp("The MQTT broker (default: ALARMD_BROKER, or localhost:1883).", valueName: "host:port"))
    public var broker: String?

    @Option(help: ArgumentHelp("The topic prefix (default: ALARMD_PREFIX, or alarmd).", valueName: "prefix"))
    public var prefix: String?

    @Option(help: "The broker username (default: ALARMD_USERNAME).")
    public var username: String?

    @Option(help: "The broker password (default: ALARMD_PASSWORD, which keeps it out of the process list).")
    public var password: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Connect with TLS, trusting this CA certificate (default: ALARMD_CA_FILE).", valueName: "pem"))
    public var caFile: String?

    @Option(name: .customLong("cert-file"), help: ArgumentHelp("A client certificate for TLS (with --key-file).", valueName: "pem"))
    public var certFile: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("The client certificate's private key.", valueName: "pem"))
    public var keyFile: String?

    @Option(name: .customLong("broker-protocol"), help: ArgumentHelp(
        "auto (MQTT 5, falling back to 3.1.1), 5 or 3.1.1 (default: ALARMD_BROKER_PROTOCOL, or auto).", valueName: "version"))
    public var brokerProtocol: String?

    public init() {}
}
