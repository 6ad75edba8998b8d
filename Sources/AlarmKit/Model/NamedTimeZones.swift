import FoundationEssentials
import FoundationInternationalization

/// Keeps named time zones working in statically linked executables.
///
/// On Linux, `TimeZone(identifier: "Europe/Berlin")` is served by FoundationInternationalization
/// (ICU), which FoundationEssentials finds by type name at run time. An executable built with
/// `--static-swift-stdlib`, as `deploy/install.sh` builds alarmd and alarmctl, contains that
/// module only if some code refers to it: without a reference every named zone is nil, and the
/// node would refuse to start or read 07:00 in GMT (a three-line program built that way shows
/// it with Swift 6.3.1). alarmd's other dependencies happen to refer to it today; this public
/// reference, linked wherever AlarmKit is, makes that explicit, and the hardware-in-the-loop
/// script checks that its static alarmd reads Europe/Berlin.
public let namedTimeZoneSupport: Any.Type = Date.FormatStyle.self

/// The zone of an IANA name (Europe/Berlin, Etc/GMT-2); nil otherwise. Foundation also reads
/// offsets (GMT+2, UTC+2), whose sign is the opposite of the IANA Etc/GMT+2's: those are refused,
/// and so are ``yearRoundOffsets``.
public func namedTimeZone(_ name: String) -> TimeZone? {
    TimeZone(identifier: name).flatMap { ["GMT+", "GMT-"].contains(where: $0.identifier.hasPrefix) || yearRoundOffsets[name] != nil ? nil : $0 }
}

/// EST, MST and HST, one offset all year (an hour late all summer where people mean their city's
/// time), with the zone usually meant.
public let yearRoundOffsets = ["EST": "America/New_York", "MST": "America/Denver (America/Phoenix keeps MST all year)", "HST": "Pacific/Honolulu"]
