extension Duration {
    /// The duration in whole nanoseconds, truncated toward zero: what the debouncer's edge
    /// timestamps and the buzzer patterns' phase arithmetic count in. Hardware timings and
    /// elapsed times are far from `Int64`'s 292 years.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
