/// Waits for the first element of `sequence` that satisfies `predicate`. The deadline only
/// keeps a missed update from hanging the test; nothing here depends on how fast updates come.
public func firstValue<S: AsyncSequence & Sendable>(
    of sequence: S, _ description: String = "matching element", within timeout: Duration = .seconds(30),
    where predicate: @escaping @Sendable (S.Element) -> Bool
) async throws -> S.Element where S.Element: Sendable {
    let found = try await withThrowingTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            for try await element in sequence where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
    guard let found else { throw TestSupportError("no \(description) within \(timeout)") }
    return found
}
