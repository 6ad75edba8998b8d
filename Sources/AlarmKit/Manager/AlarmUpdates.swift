import FoundationEssentials

extension AlarmManager {
    /// The alarms each time they change, starting with the current list (AlarmKit's
    /// `AlarmManager.AlarmUpdates`, the type of `alarmUpdates`). Any number of observers may
    /// iterate at once; a slow one skips to the newest list.
    public struct AlarmUpdates: AsyncSequence, Sendable {
        public typealias Element = [Alarm]
        public typealias Failure = Never

        let documents: Broadcast<[AlarmDocument]>

        public func makeAsyncIterator() -> Iterator {
            Iterator(documents: documents.stream().makeAsyncIterator())
        }

        /// Iterates the alarm lists.
        public struct Iterator: AsyncIteratorProtocol {
            var documents: AsyncStream<[AlarmDocument]>.Iterator

            public mutating func next() async -> [Alarm]? {
                await documents.next()?.map(\.alarm)
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> [Alarm]? {
                await documents.next(isolation: actor)?.map(\.alarm)
            }
        }
    }

    /// The authorization decision each time it changes, starting with the current one
    /// (AlarmKit's `AlarmManager.AlarmAuthorizationStateUpdates`, the type of
    /// `authorizationUpdates`).
    public struct AlarmAuthorizationStateUpdates: AsyncSequence, Sendable {
        public typealias Element = AuthorizationState
        public typealias Failure = Never

        let states: Broadcast<AuthorizationState>

        public func makeAsyncIterator() -> Iterator {
            Iterator(states: states.stream().makeAsyncIterator())
        }

        /// Iterates the decisions.
        public struct Iterator: AsyncIteratorProtocol {
            var states: AsyncStream<AuthorizationState>.Iterator

            public mutating func next() async -> AuthorizationState? {
                await states.next()
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> AuthorizationState? {
                await states.next(isolation: actor)
            }
        }
    }
}
