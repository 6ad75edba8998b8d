import AlarmKit
import Synchronization

/// Carries out the engine's effects for the daemon: the hardware first, then the state files
/// and MQTT; and hands the node's authorization prompt to the hardware. The outputs are
/// attached once they exist (they need the node, which needs this).
final class NodeEffects: AlarmNodeDelegate, AuthorizationPrompt {
    private let store: StateStore
    private let outputs = Mutex<(bridge: MQTTBridge?, hardware: NodeHardware?)>((nil, nil))

    init(store: StateStore) { self.store = store }

    func attach(bridge: MQTTBridge, hardware: NodeHardware) { outputs.withLock { $0 = (bridge, hardware) } }

    func persist(_ state: NodeState) throws { try store.save(state) }

    func show(_ engine: AlarmEngine) { outputs.withLock { $0.hardware }?.show(engine) }

    func perform(_ effects: [AlarmEffect], engine: AlarmEngine, authorization: AlarmManager.AuthorizationState) {
        outputs.withLock { $0.bridge }?.publish(effects, engine: engine, authorization: authorization)
    }

    func requestDecision() async -> AlarmManager.AuthorizationState {
        await outputs.withLock { $0.hardware }?.requestDecision() ?? .notDetermined
    }
}
