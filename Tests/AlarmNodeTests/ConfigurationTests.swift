import AlarmKit
@testable import AlarmNode
import Foundation
import Testing

@Suite("Configuration file")
struct ConfigurationTests {
    @Test("An empty file gives every default")
    func defaults() throws {
        let configuration = try ConfigurationReader.parse("")
        #expect(configuration == NodeConfiguration())
        #expect(configuration.broker.port == 1883 && configuration.broker.keepAlive == 15)
        #expect(configuration.limits.maxAlarms == 100 && configuration.limits.alertTimeout == 600)
        #expect(configuration.limits.missedAlarmGrace == 900)
        #expect(configuration.hardware.debounce == 0.030 && configuration.hardware.longPress == 1.5)
        #expect(configuration.node.topicPrefix == "alarmd")
    }

    @Test("Every section is read")
    func fullFile() throws {
        let configuration = try ConfigurationReader.parse("""
        [node]
        id = "bedroom"
        topic-prefix = "home/alarms"
        state-directory = "/tmp/alarmd"
        time-zone = "Europe/Berlin"
        authorization = "prompt"

        [broker]
        host = "broker.lan"
        port = 8883
        username = "alarmd"
        password = "secret"
        keepalive = 10

        [limits]
        max-alarms = 20
        alert-timeout = "5m"
        silence-action = "countdown"
        missed-alarm-grace = 60

        [hardware]
        mode = "gpio"
        chip = "pinctrl-rp1"
        buzzer = 12
        led = false
        stop-button = { line = "GPIO17", active-low = true, bias = "pull-up" }
        snooze-button = false
        long-press = 2
        """)
        #expect(configuration.node.id == "bedroom")
        #expect(configuration.topics.base == "home/alarms/bedroom")
        #expect(configuration.node.timeZone == "Europe/Berlin")
        #expect(configuration.node.authorization == .prompt)
        #expect(configuration.broker.host == "broker.lan" && configuration.broker.port == 8883)
        #expect(configuration.broker.password == "secret")
        #expect(configuration.limits.alertTimeout == 300)
        #expect(configuration.limits.silenceAction == .countdown)
        #expect(configuration.hardware.buzzer?.line == "12")
        #expect(configuration.hardware.led == nil)
        #expect(configuration.hardware.snoozeButton == nil)
        #expect(configuration.hardware.stopButton == .init(line: "GPIO17", activeLow: true, bias: "pull-up"))
        #expect(configuration.hardware.longPress == 2)
    }

    @Test("Every problem is reported at once, each with its key and what to do")
    func problems() {
        do {
            _ = try ConfigurationReader.parse("""
            [node]
            id = "bed room"
            time-zone = "Mars/Olympus"
            authorisation = "prompt"

            [broker]
            port = 70000
            keepalive = "often"

            [limits]
            alert-timeout = "soon"

            [hardware]
            mode = "real"
            """)
            Issue.record("a bad file was accepted")
        } catch {
            let keys = error.problems.map(\.key)
            #expect(keys == ["node.authorisation", "node.id", "node.time-zone", "broker.port", "broker.keepalive",
                             "limits.alert-timeout", "hardware.mode"])
            #expect(error.problems.first?.message.contains("did you mean 'authorization'?") == true)
            #expect(error.description.contains("7 problems"))
        }
    }

    @Test("A time zone is an IANA name: an offset such as GMT+2, whose sign is the opposite of Etc/GMT+2's, or EST, an hour off all summer, is refused")
    func timeZoneOffsets() throws {
        for zone in ["UTC", "Etc/GMT-2", "America/New_York"] {
            #expect(try ConfigurationReader.parse("[node]\ntime-zone = \"\(zone)\"").node.timeZone == zone)
        }
        for (zone, hint) in [("GMT+2", "Etc/GMT-2 for a fixed offset"), ("UTC-5", "Etc/GMT+5"), ("GMT+0530", "such as Europe/Berlin"), ("EST", "such as America/New_York")] {
            do {
                _ = try ConfigurationReader.parse("[node]\ntime-zone = \"\(zone)\"")
                Issue.record("\(zone) was accepted")
            } catch {
                #expect(error.problems.map(\.key) == ["node.time-zone"])
                #expect(error.problems.first?.message.contains("'\(zone)' is an offset") == true)
                #expect(error.problems.first?.message.contains(hint) == true, "\(error)")
            }
        }
    }

    @Test("A line written short, or a table without every key, keeps its part's defaults: a button stays active-low with the pull-up")
    func shortLinesKeepTheirPartsDefaults() throws {
        let hardware = try ConfigurationReader.parse("""
        [hardware]
        buzzer = "GPIO12"
        led = { line = 5, active-low = true }
        stop-button = 22
        snooze-button = { line = "GPIO26", bias = "as-is" }
        """).hardware
        let pullDown = try ConfigurationReader.parse("[hardware]\nstop-button = { line = 22, bias = \"pull-down\" }").hardware.stopButton
        #expect(hardware.buzzer == .init(line: "GPIO12", activeLow: false, bias: "as-is"))
        #expect(hardware.led == .init(line: "5", activeLow: true, bias: "as-is"))
        #expect(hardware.stopButton == .init(line: "22", activeLow: true, bias: "pull-up"))
        #expect(hardware.snoozeButton == .init(line: "GPIO26", activeLow: true, bias: "as-is"))
        #expect(pullDown == .init(line: "22", activeLow: false, bias: "pull-down"))
    }

    @Test("A duration string without its unit that could be minutes, and a broker host written as a URL, in brackets or with its port, are refused")
    func ambiguousValues() throws {
        for (text, key) in [("[limits]\nalert-timeout = \"10\"", "limits.alert-timeout"), ("[broker]\nhost = \"mqtt://pi.lan\"", "broker.host"),
                            ("[broker]\nhost = \"127.0.0.1:1883\"", "broker.host"), ("[broker]\nhost = \"[::1]\"", "broker.host"),
                            ("[broker]\nhost = \"pi.lan:\"", "broker.host")] {
            do { _ = try ConfigurationReader.parse(text); Issue.record("accepted: \(text)") } catch { #expect(error.problems.map(\.key) == [key]) }
        }
        do { _ = try ConfigurationReader.parse("[limits]\nalert-timeout = \"20\""); Issue.record("accepted a duration without its unit") } catch {
            // 20 is in range: what is wrong is the missing unit, which the message says first.
            #expect(error.problems.map(\.message) == ["\"20\" has no unit; it must be seconds from 5.0 to 86400.0, as a number or a string with its unit like \"90s\", \"10m\", \"1h30m\""])
        }
        #expect(try ConfigurationReader.parse("[limits]\nalert-timeout = \"10m\"").limits.alertTimeout == 600)
        #expect(try ConfigurationReader.parse("[broker]\nhost = \"fe80::1\"").broker.host == "fe80::1")
        // Where minutes would be out of range, a bare number can only be seconds.
        #expect(try ConfigurationReader.parse("[hardware]\ndebounce = \"0.03\"").hardware.debounce == 0.03)
    }

    @Test("Values that cannot work are refused: a negative line offset, one line for two parts, an empty host or state folder")
    func unworkableValues() {
        do {
            _ = try ConfigurationReader.parse("""
            [node]
            state-directory = ""
            [broker]
            host = ""
            [hardware]
            buzzer = -1
            led = { line = 17, active-low = true }
            snooze-button = "17"
            """)
            Issue.record("a file with unworkable values was accepted")
        } catch {
            #expect(error.problems.map(\.key) == ["node.state-directory", "broker.host", "hardware.buzzer", "hardware.led", "hardware.snooze-button"])
            // The stop button keeps its default line, 17: the led, which the file sets, is the part to move.
            #expect(error.problems.suffix(2).map(\.message) == [
                // The stop button is required: no "= false for none" for it.
                "line 17 is the stop-button's default: choose another line, or give stop-button one of its own",
                "line 17 is the led's already: give each part a line of its own",
            ])
        }
    }

    @Test("A problem names what to change: the key set on another part's default line, the table a key belongs under, the choice meant, the quotes a value needs")
    func problemsSayWhatToChange() {
        let cases: [(text: String, key: String, message: String)] = [
            ("[hardware]\nstop-button = 27", "hardware.stop-button",
             "line 27 is the snooze-button's default: choose another line, or give snooze-button one of its own (snooze-button = false for none)"),
            ("[hardware]\nsnooze-button = 18", "hardware.snooze-button",
             "line 18 is the buzzer's default: choose another line, or give buzzer one of its own"),
            ("id = \"pi\"", "id", "belongs under [node]: move it there"),
            ("[limits]\nescalate-after = 60", "limits.escalate-after", "belongs under [hardware]: move it there"),
            ("[node]\nhost = \"broker.lan\"", "node.host", "belongs under [broker]: move it there"),
            ("[hardware]\nmode = \"gpoi\"", "hardware.mode", "'gpoi' is not one of: \"auto\", \"gpio\", \"simulated\" (did you mean 'gpio'?)"),
            ("[node]\ntime-zone = Europe/Berlin  # home", "",
             "is not valid TOML at line 2, column 13: Error while parsing value: could not determine value type; text goes in quotes: time-zone = \"Europe/Berlin\""),
            ("[node]\nprefix = \"home\"", "node.prefix", "belongs under [home-assistant], or did you mean 'topic-prefix'?"),
            ("[broker]\ntsl = true", "broker.tsl", "unknown key (did you mean 'tls'?); known keys here: ca-file, cert-file, client-id, host, "
                + "keepalive, key-file, outgoing-buffer, password, password-file, port, protocol, tls, tls-insecure, username"),
            // toml++'s words quote part of the value: not on a password's line.
            ("[broker]\r\npassword = hunter2", "", "is not valid TOML at line 2, column 12; text goes in quotes: password = \"…\""),
            ("[broker]\npassword = trustno1", "", "is not valid TOML at line 2, column 15; text goes in quotes: password = \"…\""),
            // Text that toml++ starts reading as a number, a boolean or a time: a broker's address, a host name, a duration.
            ("[broker]\nhost = 192.168.1.10   # the NAS", "", "is not valid TOML at line 2, column 15: Error while parsing floating-point: "
                + "expected decimal digit or exponent, saw '.'; text goes in quotes: host = \"192.168.1.10\""),
            ("[broker]\nhost = fe80::1", "", "is not valid TOML at line 2, column 9: Error while parsing boolean: expected 'false', saw 'fe'"
                + "; text goes in quotes: host = \"fe80::1\""),
            ("[limits]\nalert-timeout = 10m", "", "is not valid TOML at line 2, column 19: Error while parsing decimal integer: "
                + "expected digit, saw 'm'; text goes in quotes: alert-timeout = \"10m\""),
            // A mistyped number or boolean is not text.
            ("[broker]\ntls = True", "", "is not valid TOML at line 2, column 7: Error while parsing boolean: expected 'true', saw 'T'"),
            ("[broker]\nport = 18 83", "", "is not valid TOML at line 2, column 11: Error while parsing key-value pair: expected a comment or whitespace, saw '8'"),
            // A quote not closed: toml++ speaks of control characters (the line's end) or of the file's end.
            ("[node]\ntime-zone = \"Europe/Berlin\nauthorization = \"prompt\"", "", "is not valid TOML at line 2, column 27: Error while parsing string: "
                + "unescaped control characters other than TAB (U+0009) are explicitly prohibited; a quote is not closed: end the text on its line with the quote it starts with"),
            ("[node]\r\nid = 'kitchen\r\n", "", "is not valid TOML at line 2, column 14: Error while parsing literal string: "
                + "control characters other than TAB (U+0009) are explicitly prohibited; a quote is not closed: end the text on its line with the quote it starts with"),
            ("[node]\nid = \"kitchen", "", "is not valid TOML at line 2, column 14: Error while parsing string: encountered end-of-file"
                + "; a quote is not closed: end the text on its line with the quote it starts with"),
            ("[node]\nfoo = 1", "node.foo", "unknown key; known keys here: authorization, groups, id, state-directory, time-zone, topic-prefix"),
            ("[hardware]\nstop-button = { line = 17, bias = \"disable\" }", "hardware.stop-button.bias",
             "'disable' is not one of: \"pull-up\", \"pull-down\", \"disabled\", \"as-is\" (did you mean 'disabled'?)"),
            ("[hardware]\nbuzzer = 4294967296", "hardware.buzzer", "4294967296 is not a line offset: no chip has that many lines"),
            ("[node]\nstate-directory = \"state\"", "node.state-directory",
             "'state' is relative, so it would depend on the folder alarmd starts in (/ under systemd): give the full path, such as /var/lib/alarmd"),
        ]
        for (text, key, message) in cases {
            do { _ = try ConfigurationReader.parse(text); Issue.record("accepted: \(text)") } catch {
                #expect(error.problems == [ConfigurationProblem(key: key, message: message)], "\(text)")
            }
        }
    }

    @Test("Button timings may be written in milliseconds; a debounce not shorter than long-press is a warning")
    func milliseconds() throws {
        let hardware = try ConfigurationReader.parse("[hardware]\ndebounce = \"30ms\"\nlong-press = \"1s 500ms\"").hardware
        #expect(hardware.debounce == 0.03 && hardware.longPress == 1.5 && hardware.timingProblem == nil)
        let slow = try ConfigurationReader.parse("[hardware]\ndebounce = 0.5\nlong-press = 0.4").hardware
        #expect(slow.timingProblem?.hasPrefix("hardware.debounce (0.5 s) is not shorter than hardware.long-press (0.4 s)") == true)
    }

    @Test("tls without ca-file is refused by check-config, as the daemon would refuse it")
    func tlsNeedsCAFile() {
        do {
            _ = try ConfigurationReader.parse("[broker]\ntls = true\n")
            Issue.record("tls without ca-file was accepted")
        } catch {
            #expect(error.problems.map(\.key).contains("broker.ca-file"))
        }
    }

    @Test("Broker settings the daemon's MQTT client refuses at start are refused by check-config too", arguments: [
        ("password = \"secret\"", "broker.username"),
        ("password-file = \"/etc/hostname\"", "broker.username"),
        ("tls = true\nca-file = \"/etc/hostname\"\ncert-file = \"/etc/hostname\"", "broker.key-file"),
        ("tls = true\nca-file = \"/etc/hostname\"\nkey-file = \"/etc/hostname\"", "broker.cert-file"),
        ("client-id = \"\"", "broker.client-id"),
    ])
    func brokerSettingsTheClientRefuses(settings: String, key: String) {
        do {
            _ = try ConfigurationReader.parse("[broker]\n\(settings)\n")
            Issue.record("accepted, but alarmd would not start with it: \(settings)")
        } catch {
            #expect(error.problems.map(\.key) == [key], "\(error)")
        }
    }

    @Test("[intents] allow: topic filters, each checked; the engine gets them with the node's base")
    func intentsAllow() throws {
        let configuration = try ConfigurationReader.parse("""
        [node]
        id = "bedroom"
        [intents]
        allow = ["home/lights/+/set", "garden/#"]
        """)
        #expect(configuration.intents.allow == ["home/lights/+/set", "garden/#"])
        let topics = try #require(configuration.engineConfiguration(timeZone: TimeZone(identifier: "UTC")!).intentTopics)
        #expect(topics.refusal(of: "home/lights/hall/set") == nil && topics.refusal(of: "alarmd/bedroom/intents/x") == nil)
        #expect(topics.refusal(of: "home/door/unlock") != nil)
        #expect(NodeConfiguration().intents.allow.isEmpty)
        do {
            _ = try ConfigurationReader.parse("[intents]\nallow = [\"home/#/set\", \"ok/+\", \"a+/b\", \"\"]\nopen = true")
            Issue.record("bad filters were accepted")
        } catch {
            #expect(error.problems.map(\.key) == ["intents.open", "intents.allow", "intents.allow", "intents.allow"])
            #expect(error.problems.map(\.message).contains { $0.contains("'home/#/set'") })
        }
        #expect(throws: ConfigurationError.self) { try ConfigurationReader.parse("[intents]\nallow = \"home/#\"") }
        #expect(throws: ConfigurationError.self) { try ConfigurationReader.parse("[intents]\nallow = [1]") }
    }

    @Test("A TOML syntax error says where")
    func syntax() {
        #expect(throws: ConfigurationError.self) { try ConfigurationReader.parse("[node\nid = 1") }
        do {
            _ = try ConfigurationReader.parse("[node]\nid = \"a\"\nid = \"b\"")
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.problems.first?.message.contains("line") == true)
        }
    }

    @Test("A file that cannot be read says why: missing, a folder, or not UTF-8 (not 'check its permissions' for all)")
    func unreadableFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "alarmd-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let latin1 = folder.appending(path: "latin1.toml")
        try Data("[node]\nid = \"k".utf8 + [0xE9] + Data("che\"\n".utf8)).write(to: latin1)
        for (path, expected) in [(folder.appending(path: "missing.toml").path, "does not exist: create it or correct the configured path"),
                                 (folder.path, "is a directory: give the path of a file in it"),
                                 (latin1.path, "is not UTF-8 text: save it as UTF-8")] {
            do {
                _ = try ConfigurationReader.read(path: path)
                Issue.record("\(path) was read")
            } catch {
                #expect(error.problems.map(\.message).joined().contains(expected), "\(error.problems)")
            }
        }
    }

    @Test("A single-button board needs the stop line")
    func buttons() {
        #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.parse("[hardware]\nstop-button = false")
        }
    }

    @Test("node.groups and broker.protocol are read and checked")
    func groupsAndProtocol() throws {
        let configuration = try ConfigurationReader.parse("""
        [node]
        groups = ["house", "kids"]
        [broker]
        protocol = "3.1.1"
        """)
        #expect(configuration.node.groups == ["house", "kids"])
        #expect(configuration.broker.protocolSetting == .v311)
        #expect(try ConfigurationReader.parse("[broker]\nprotocol = 5").broker.protocolSetting == .v5)
        #expect(NodeConfiguration().broker.protocolSetting == .auto && NodeConfiguration().node.groups.isEmpty)
        for bad in ["[node]\ngroups = [\"a b\"]", "[node]\ngroups = [\"x\", \"x\"]", "[node]\ngroups = \"house\"", "[broker]\nprotocol = \"4\""] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationReader.parse(bad) }
        }
        do {
            _ = try ConfigurationReader.parse("[node]\ngroups = [\"ok\", \"bad name\", \"a/b\", \"ok\"]")
            Issue.record("bad group names were accepted")
        } catch {
            #expect(error.problems.map(\.message) == ["'bad name' is not a group name: use letters, digits, '_' and '-' (at most 64)",
                                                      "'a/b' is not a group name: use letters, digits, '_' and '-' (at most 64)",
                                                      "'ok' is listed twice"], "every bad name at once")
        }
    }

    @Test("Each setting of the file that a command-line flag overrides with another value is named, with its flag")
    func commandLineOverrides() throws {
        let file = try ConfigurationReader.parse("[node]\nid = \"kitchen\"\ntime-zone = \"Europe/Berlin\"\n[limits]\nmax-alarms = 5\n")
        var inForce = file
        inForce.node.id = "kitchen"  // a flag giving the file's own value overrides nothing
        inForce.node.timeZone = "America/New_York"
        inForce.node.groups = ["house"]
        (inForce.broker.host, inForce.broker.port) = ("broker.lan", 8883)
        inForce.hardware.mode = .simulated
        #expect(inForce.overrides(of: file) == [
            "node.groups: [] from the file or default, [\"house\"] by --group",
            "node.time-zone: Europe/Berlin from the file or default, America/New_York by --time-zone",
            "broker.host and broker.port: localhost:1883 from the file or default, broker.lan:8883 by --broker",
            "hardware.mode: auto from the file or default, simulated by --simulate-hardware",
        ])
        #expect(file.overrides(of: file).isEmpty)
    }
}
