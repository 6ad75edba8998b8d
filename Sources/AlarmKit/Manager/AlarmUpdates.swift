
extension AlarmManager {
    /// AlarmKit's `AlarmManager.AlarmUpdates`: the type of ``alarmUpdates``.
    public typealias AlarmUpdates = BroadcastUpdates<[AlarmDocument], [Alarm]>

    /// AlarmKit's `AlarmManager.AlarmAuthorizationStateUpdates`: the type of ``authorizationUpdates``.
    public typealias AlarmAuthorizationStateUpdates = BroadcastUpdates<AuthorizationState, AuthorizationState>
}

/// A ``Broadcast``'s value each time it changes, starting with the current one, as `transform`
/// makes it. Any number of observers may iterate at once; a slow one skips to the newest value.
public struct BroadcastUpdates<Value: Sendable, Element: Sendable>: AsyncSequence, Sendable {
    let values: Broadcast<Value>
    let transform: @Sendable (Value) -> Element

    public func makeAsyncIterator() -> Iterator { Iterator(values: values.stream().makeAsyncIterator(), transform: transform) }

    /// Iterates the values.
    public struct Iterator: AsyncIteratorProtocol {
        var values: AsyncStream<Value>.Iterator
        let transform: @Sendable (Value) -> Element

        public mutating func next() async -> Element? { await values.next().map(transform) }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await values.next(isolation: actor).map(transform)
        }
    }
}
