import Foundation
import Glibc

/// Clock readings in nanoseconds: the monotonic clock for durations, the wall clock for lateness
/// against wall-clock instants (alarms are scheduled in wall-clock time).
enum Nanos {
    static func monotonic() -> Int64 { read(CLOCK_MONOTONIC) }
    static func realtime() -> Int64 { read(CLOCK_REALTIME) }
    private static func read(_ clock: clockid_t) -> Int64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// p50 and p99 (nearest rank) of a sample of nanoseconds, in milliseconds.
struct Stats: Codable, Sendable {
    var count: Int
    var p50: Double
    var p99: Double

    init(_ nanoseconds: [Int64]) {
        let sorted = nanoseconds.sorted()
        count = sorted.count
        func rank(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1)
            return Double(sorted[min(index, sorted.count - 1)]) / 1e6
        }
        p50 = rank(0.50)
        p99 = rank(0.99)
    }
}

/// How late a bare `clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)` wakes, on a thread of its own
/// (not Swift's pool): for each of `targets` (wall-clock ns), or with sleeps of `interval` ns one
/// after the other until `until()` says stop. With `publisher`, the thread also publishes each
/// target's instant as soon as it wakes for it (the floor of an event's way to a subscriber).
func clockNanosleepLateness(targets: [Int64] = [], interval: Int64 = 0, publisher: BarePublisher? = nil,
                            until: @escaping @Sendable () -> Bool = { true }) async -> [Int64] {
    @Sendable func lateness(_ target: Int64) -> Int64 {
        var deadline = timespec(tv_sec: Int(target / 1_000_000_000), tv_nsec: Int(target % 1_000_000_000))
        while clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &deadline, nil) == EINTR {}
        let late = Nanos.realtime() - target
        publisher?.publish("\(target)")
        return late
    }
    return await withCheckedContinuation { continuation in
        let thread = Thread {
            var samples = targets.map(lateness)
            if targets.isEmpty { while !until() { samples.append(lateness(Nanos.realtime() + interval)) } }
            continuation.resume(returning: samples)
        }
        thread.name = "bench-nanosleep"
        thread.start()
    }
}

/// The least an MQTT publisher can do: a blocking TCP socket (`TCP_NODELAY`) with an MQTT 3.1.1
/// session, on which `publish` writes one QoS 0 PUBLISH from the calling thread, with no network
/// thread and no library in between. Written by hand because its point is to have none: the
/// baseline of row 2. The broker's CONNACK is read once; nothing else is read.
final class BarePublisher: Sendable {
    private let socket: Int32
    private let topic: [UInt8]

    init(port: Int, topic: String) throws {
        self.topic = Array(topic.utf8)
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: in_port_t(UInt16(port).bigEndian),
                                  sin_addr: in_addr(s_addr: UInt32(0x7f00_0001).bigEndian), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var on: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // CONNECT: protocol "MQTT" level 4, clean session, no keepalive, client id "bench-bare".
        let clientID = Array("bench-bare".utf8)
        let body: [UInt8] = [0, 4] + Array("MQTT".utf8) + [4, 2, 0, 0, 0, UInt8(clientID.count)] + clientID
        var connack = [UInt8](repeating: 0, count: 4)
        guard connected == 0, send(packet: 0x10, body), recv(socket, &connack, 4, Int32(MSG_WAITALL)) == 4, connack[0] == 0x20, connack[3] == 0 else {
            // deinit closes the socket: every stored property is set by now.
            throw BenchError("the bare publisher could not connect to 127.0.0.1:\(port) (CONNACK \(connack))")
        }
    }

    deinit { close(socket) }

    /// Writes a PUBLISH (QoS 0) of `text` to the topic.
    func publish(_ text: String) {
        _ = send(packet: 0x30, [UInt8(topic.count >> 8), UInt8(topic.count & 0xff)] + topic + Array(text.utf8))
    }

    /// One packet: its type byte, the remaining length (MQTT's variable-length integer), `body`.
    private func send(packet type: UInt8, _ body: [UInt8]) -> Bool {
        var bytes = [type], length = body.count
        repeat {
            bytes.append(UInt8(length & 0x7f) | (length > 0x7f ? 0x80 : 0))
            length >>= 7
        } while length > 0
        bytes += body
        return Glibc.send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
    }
}

/// One atomic file write as a careful program does it: a temporary file in `directory`, written
/// and fsync'd, renamed over the target, then the directory fsync'd. Returns its duration in ns.
func atomicWrite(_ bytes: [UInt8], in directory: String) throws -> Int64 {
    let start = Nanos.monotonic()
    let target = directory + "/bench-atomic.json", temporary = target + ".tmp"
    let file = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw BenchError("open \(temporary): \(String(cString: strerror(errno)))") }
    let written = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    let synced = fsync(file) == 0
    close(file)
    guard written == bytes.count, synced, rename(temporary, target) == 0 else { throw BenchError("atomic write in \(directory) failed") }
    let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard folder >= 0, fsync(folder) == 0 else { throw BenchError("fsync of \(directory) failed") }
    close(folder)
    return Nanos.monotonic() - start
}

/// What /proc says about a process.
enum Proc {
    /// Context switches (voluntary + nonvoluntary) of every thread, by thread id, with its name.
    static func switches(_ pid: Int32) -> [String: (name: String, count: Int64)] {
        var result: [String: (name: String, count: Int64)] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let path = "/proc/\(pid)/task/\(task)/"
            guard let status = try? String(contentsOfFile: path + "status", encoding: .utf8) else { continue }
            let name = (try? String(contentsOfFile: path + "comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? task
            result[task] = (name, field(status, "voluntary_ctxt_switches") + field(status, "nonvoluntary_ctxt_switches"))
        }
        return result
    }

    /// Switches per minute between two readings `seconds` apart: the total, and by thread name
    /// (threads of the same name added up), most first.
    static func wakeUps(from before: [String: (name: String, count: Int64)], to after: [String: (name: String, count: Int64)],
                        seconds: Double) -> (total: Double, byThread: String) {
        var byName: [String: Int64] = [:]
        for (task, now) in after { byName[now.name, default: 0] += now.count - (before[task]?.count ?? 0) }
        let perMinute = { (count: Int64) in (Double(count) * 60 / seconds).rounded() }
        let listed = byName.filter { $0.value > 0 }.sorted { $0.value > $1.value }.map { "\($0.key) \(Int(perMinute($0.value)))" }
        return (perMinute(byName.values.reduce(0, +)), listed.joined(separator: ", "))
    }

    /// `/proc/<pid>/smaps_rollup`, in kB: Pss, Private_Dirty, Anonymous, Rss.
    static func memory(_ pid: Int32) -> [String: Int64] {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
        return Dictionary(uniqueKeysWithValues: ["Pss", "Private_Dirty", "Anonymous", "Rss"].map { ($0, field(text, $0)) })
    }

    /// `write_bytes` of `/proc/<pid>/io`: what the process caused to be written to storage.
    static func writeBytes(_ pid: Int32) -> Int64 {
        field((try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? "", "write_bytes")
    }

    private static func field(_ text: String, _ key: String) -> Int64 {
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return line.dropFirst(key.count + 1).split(whereSeparator: \.isWhitespace).first.flatMap { Int64($0) } ?? 0
        }
        return 0
    }
}

/// The host's steal time: the share of the machine's CPU time (first line of /proc/stat) that the
/// hypervisor gave to others while this VM's CPUs wanted to run, between `start()` and `percent`.
struct Steal {
    private let begin: (total: Int64, steal: Int64)
    init() { begin = Self.ticks() }
    var percent: Double {
        let now = Self.ticks()
        let total = now.total - begin.total
        return total > 0 ? 100 * Double(now.steal - begin.steal) / Double(total) : .nan
    }

    private static func ticks() -> (total: Int64, steal: Int64) {
        let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        // user nice system idle iowait irq softirq steal (man 5 proc); guest time is inside user.
        let ticks = stat.split(separator: "\n").first?.split(separator: " ").dropFirst().prefix(8).map { Int64($0) ?? 0 } ?? []
        return ticks.count == 8 ? (ticks.reduce(0, +), ticks[7]) : (0, 0)
    }
}
