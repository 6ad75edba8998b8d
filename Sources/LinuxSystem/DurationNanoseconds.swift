extension Duration {
    /// The duration in whole nanoseconds (truncated toward zero), saturating at `Int64`'s
    /// bounds (about 292 years either way): what the kernel's time interfaces take.
    public var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !sumOverflow else { return seconds < 0 ? .min : .max }
        return sum
    }
}
