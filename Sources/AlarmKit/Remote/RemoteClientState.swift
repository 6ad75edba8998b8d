import FoundationEssentials
import Logging
import Mosquitto
import Synchronization

/// The MQTT client of a ``RemoteNodeConnection`` or a ``RemoteGroup``, made on first use.
protocol RemoteClientState {
    var client: MQTTClient? { get set }
    /// The task that hands the client's messages over.
    var loop: Task<Void, Never>? { get set }
    /// Why the MQTT client could not be created (an unreadable TLS file, …), for the request's error.
    var setupFailure: String? { get set }
}

extension Mutex where Value: RemoteClientState {
    /// Creates the client once (later calls do nothing), subscribes to `filters` (QoS 1), connects,
    /// and hands every event to `receive` with `owner` on a task of its own until the client's
    /// events end or `owner` (held weakly) is gone. A failure is logged: after a failure to create
    /// the client, requests fail with it; after one to subscribe or connect, the client keeps trying.
    func startClient<Owner: AnyObject & Sendable>(
        settings: RemoteNodeSettings, filters: [String], logger: Logger, owner: Owner,
        receive: @escaping @Sendable (Owner, MQTTEvent) -> Void
    ) {
        // Logged after the lock is released: a log handler may deliver the line to observers
        // (alarmctl's connection problems), and nothing is delivered under the lock, which the
        // owner's stream termination handlers take.
        let setup = withLock { state -> Result<MQTTClient, MQTTError>? in
            guard state.client == nil else { return nil }
            if let problem = settings.environmentProblem {
                // Logged once; requests fail with it (``requestClient(settings:)``).
                defer { state.setupFailure = problem }
                return state.setupFailure == nil ? .failure(MQTTError(code: .invalidConfiguration, message: problem)) : nil
            }
            do throws(MQTTError) {
                let client = try MQTTClient(configuration: settings.mqttConfiguration(), logger: logger)
                state.client = client
                return .success(client)
            } catch {
                state.setupFailure = "\(error)"
                return .failure(error)
            }
        }
        switch setup {
        case .success(let client):
            do {
                for filter in filters { try client.subscribe(filter, qos: 1) }
                try client.connect()
            } catch { logger.error("MQTT connect failed", metadata: ["error": "\(error)"]) }
            let loop = Task { [events = client.events, weak owner] in
                for await event in events {
                    guard let owner else { return }
                    receive(owner, event)
                }
            }
            withLock { $0.loop = loop }
        case .failure(let error): logger.error("MQTT client not created", metadata: ["error": "\(error)"])
        case nil: break
        }
    }

    /// The client for a request, after `startClient`: `unavailable`, saying why, when there is none.
    func requestClient(settings: RemoteNodeSettings) throws(AlarmNodeError) -> MQTTClient {
        let (client, setupFailure) = withLock { ($0.client, $0.setupFailure) }
        if let problem = settings.environmentProblem { throw .unavailable(problem) }
        guard let client else {
            throw .unavailable("cannot set up a connection to the broker \(settings.brokerDescription): \(setupFailure ?? "check \(settings.name(of: .broker))")")
        }
        return client
    }
}

extension Logger {
    /// The logger of a remote client made without one: warnings and errors only, so that an app
    /// that never set up logging does not print every connection. Pass a logger to see more.
    @usableFromInline static func remoteClient(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .warning
        return logger
    }
}

extension MQTTMessage {
    /// A command to `topic` (QoS 1): `fields` with `replyTo` and `correlationID` for 3.1.1
    /// connections, and both again as the MQTT 5 properties.
    static func command(topic: String, fields: [String: JSONValue], replyTopic: String, correlation: String) -> MQTTMessage {
        let payload = fields.merging(["replyTo": .string(replyTopic), "correlationID": .string(correlation)]) { $1 }
        return MQTTMessage(topic: topic, payload: (try? AlarmJSON.encode(JSONValue.object(payload))) ?? [], qos: 1,
                           responseTopic: replyTopic, correlationData: Array(correlation.utf8))
    }

    /// The correlation id of a reply: its MQTT 5 correlation data, or its payload's `correlationID`.
    var replyCorrelation: String? {
        struct Correlated: Decodable { var correlationID: String? }
        return correlationData.flatMap { String(validating: $0, as: UTF8.self) }
            ?? (try? JSONDecoder().decode(Correlated.self, from: Data(payload)))?.correlationID
    }
}

/// The fields of a `schedule` command for alarm `id`.
func scheduleFields(id: UUID, configuration: AlarmManager.AlarmConfiguration<JSONValue>) throws(AlarmNodeError) -> [String: JSONValue] {
    do {
        return ["id": .string(id.uuidString), "configuration": try JSONValue(encoding: configuration)]
    } catch { throw .invalidConfiguration(field: "configuration", reason: "cannot be written as JSON: \(error)") }
}
