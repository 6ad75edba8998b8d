import AlarmKit
import Logging
import Synchronization

/// Carries out the engine's effects for the daemon: the state file first, then MQTT and the
/// hardware. The outputs are attached once they exist (they need the node, which needs this).
final class NodeEffects: AlarmNodeDelegate {
    private let store: StateStore
    private let memoryRelease = QuietMemoryRelease()
    private let outputs = Mutex<(bridge: MQTTBridge?, hardware: NodeHardware?)>((nil, nil))

    init(store: StateStore) {
        self.store = store
    }

    func attach(bridge: MQTTBridge, hardware: NodeHardware) {
        outputs.withLock { $0 = (bridge, hardware) }
    }

    func persist(_ state: NodeState) throws {
        defer { memoryRelease.wrote() }
        try store.save(state)
    }

    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
        let (bridge, hardware) = outputs.withLock { $0 }
        hardware?.show(engine)
        bridge?.publish(effects, engine: engine, authorization: authorization)
    }
}
