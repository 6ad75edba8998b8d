import AlarmKit
import AlarmctlCore
import Foundation
import Testing

@Suite("Configurations sent by timer and alarm")
struct RequestTests {
    @Test("A timer: its duration, its Repeat, title and sound")
    func timer() throws {
        let configuration = try AlarmRequest.timer(duration: 600, title: "Tea", snooze: 300, sound: "gentle")
        #expect(configuration.schedule == nil)
        #expect(configuration.countdownDuration == .init(preAlert: 600, postAlert: 300))
        #expect(configuration.attributes.presentation.alert.title == "Tea")
        #expect(configuration.attributes.presentation.alert.secondaryButton?.text == "Repeat")
        #expect(configuration.attributes.presentation.alert.secondaryButtonBehavior == .countdown)
        #expect(configuration.attributes.presentation.countdown?.title == "Tea")
        #expect(configuration.sound == .named("gentle"))
        let plain = try AlarmRequest.timer(duration: 60, title: nil, snooze: nil, sound: nil)
        #expect(plain.attributes.presentation.alert.title == "Timer")
        #expect(plain.countdownDuration == .init(preAlert: 60, postAlert: nil))
        #expect(plain.sound == .default)
    }

    @Test("An alarm: snooze button or none, pre-alert")
    func alarm() throws {
        let schedule = Alarm.Schedule.relative(.init(time: .init(hour: 7, minute: 0), repeats: .weekly([.monday])))
        let snoozing = try AlarmRequest.alarm(schedule: schedule, title: nil, snooze: 540, preAlert: 600, sound: nil, timeZone: .gmt)
        #expect(snoozing.schedule == schedule)
        #expect(snoozing.countdownDuration == .init(preAlert: 600, postAlert: 540))
        #expect(snoozing.attributes.presentation.alert.title == "Alarm")
        #expect(snoozing.attributes.presentation.alert.secondaryButton?.text == "Snooze")
        let silent = try AlarmRequest.alarm(schedule: schedule, title: "Wake", snooze: nil, preAlert: nil, sound: nil, timeZone: .gmt)
        #expect(silent.countdownDuration == nil)
        #expect(silent.attributes.presentation.alert.secondaryButton == nil)
        #expect(silent.attributes.presentation.alert.secondaryButtonBehavior == nil)
    }

    @Test("What the node would refuse is a usage error first")
    func refusedEarly() {
        #expect(throws: AlarmctlError.usage("--title: must be 1 to 128 UTF-8 bytes, is 129")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try AlarmRequest.timer(duration: 60, title: String(repeating: "x", count: 129), snooze: nil, sound: nil) }
        }
        #expect(throws: AlarmctlError.usage("--title: must be 1 to 128 UTF-8 bytes, is 0")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try AlarmRequest.timer(duration: 60, title: "", snooze: nil, sound: nil) }
        }
        #expect(throws: AlarmctlError.usage("--sound must be 1 to 64 bytes")) {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try AlarmRequest.timer(duration: 60, title: nil, snooze: nil, sound: "") }
        }
        #expect {
            try AlarmctlError.reading { () throws(HumanSyntaxError) in try AlarmRequest.alarm(schedule: .fixed(Date(timeIntervalSince1970: 1_768_000_000)), title: nil, snooze: nil, preAlert: nil, sound: nil, timeZone: .gmt) }
        } throws: { error in
            guard case AlarmctlError.usage(let message)? = error as? AlarmctlError else { return false }
            return message.hasPrefix("the date Fri 2026-01-09 23:06:40 GMT has passed (it is ") && message.hasSuffix("give a date in the future")
        }
    }

    @Test("The configuration passes the node's strict command decoder unchanged")
    func nodeAcceptsIt() throws {
        let configuration = try AlarmRequest.alarm(
            schedule: try ScheduleExpression.parse(["06:45", "weekdays"]).schedule(in: .gmt),
            title: "Wake up", snooze: 540, preAlert: 300, sound: "gentle", timeZone: .gmt)
        let id = UUID()
        let payload = try AlarmJSON.encoder.encode(JSONValue.object(["id": .string(id.uuidString), "configuration": try JSONValue(encoding: configuration)]))
        let command = try NodeCommand.decode(operation: "schedule", payload: Array(payload)).get()
        #expect(command.action == .schedule(id: id, configuration: configuration, group: nil))
    }
}

@Suite("Where the node is: options over environment variables")
struct ConnectionSettingsTests {
    let environment = [
        "ALARMD_BROKER": "10.0.0.2:1884", "ALARMD_NODE": "bedroom", "ALARMD_PREFIX": "home",
        "ALARMD_USERNAME": "ann", "ALARMD_PASSWORD": "secret", "ALARMD_CA_FILE": "/etc/ca.pem",
    ]

    /// The settings of a command line: the broker options alarmctl shares with the companion, and
    /// its own --node and --timeout.
    func settings(_ arguments: [String], environment: [String: String]) throws -> RemoteNodeSettings {
        var brokerArguments: [String] = [], node: String?, timeout: Double?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--node": node = rest.popFirst()
            case "--timeout": timeout = rest.popFirst().flatMap(Double.init)
            default: brokerArguments.append(argument)
            }
        }
        return try BrokerOptions.parse(brokerArguments).settings(node: node, timeout: timeout, environment: environment)
    }

    @Test("The environment alone")
    func environmentOnly() throws {
        let settings = try settings([], environment: environment)
        #expect(settings.host == "10.0.0.2" && settings.port == 1884)
        #expect(settings.node == "bedroom" && settings.topicPrefix == "home")
        #expect(settings.username == "ann" && settings.password == "secret" && settings.caFile == "/etc/ca.pem")
        #expect(settings.timeout == .seconds(5))
    }

    @Test("Options win over the environment")
    func optionsWin() throws {
        let settings = try settings([
            "--broker", "[::1]:8883", "--node", "kitchen", "--prefix", "alarms", "--username", "bob", "--password", "pw",
            "--ca-file", "/ca.pem", "--cert-file", "/c.pem", "--key-file", "/k.pem", "--timeout", "2.5",
        ], environment: environment)
        #expect(settings.host == "::1" && settings.port == 8883)
        #expect(settings.node == "kitchen" && settings.topicPrefix == "alarms")
        #expect(settings.username == "bob" && settings.password == "pw")
        #expect(settings.caFile == "/ca.pem" && settings.certFile == "/c.pem" && settings.keyFile == "/k.pem")
        #expect(settings.timeout == .milliseconds(2500))
        // A flag over a misspelt variable: the variable's mistake no longer matters.
        let overridden = try self.settings(["--broker-protocol", "5"], environment: ["ALARMD_BROKER_PROTOCOL": "mqtt5"])
        #expect(overridden.brokerProtocol == .v5 && overridden.environmentProblem == nil)
    }

    @Test("Defaults: localhost:1883 and a node named after this host")
    func defaults() throws {
        let settings = try settings([], environment: [:])
        #expect(settings.host == "localhost" && settings.port == 1883)
        #expect(NodeTopics.isValidNodeID(settings.node))
    }

    @Test("Mistakes name where the value came from", arguments: [
        ([], ["ALARMD_BROKER": "host:99999"], "ALARMD_BROKER 'host:99999' is not a broker address"),
        (["--broker", ":1883"], [:], "--broker ':1883' is not a broker address"),
        ([], ["ALARMD_NODE": "bed room"], "ALARMD_NODE 'bed room' is not a node id"),
        (["--node", "a/b"], [:], "--node 'a/b' is not a node id"),
        (["--prefix", "a+b"], [:], "--prefix 'a+b' is not a topic prefix"),
        ([], ["ALARMD_PREFIX": "home/#"], "ALARMD_PREFIX 'home/#' is not a topic prefix"),
        ([], ["ALARMD_PREFIX": "home/"], "ALARMD_PREFIX 'home/' is not a topic prefix"),
        (["--password", "pw"], [:], "a password is set without a username"),
        (["--ca-file", "/ca", "--cert-file", "/c"], [:], "--cert-file and --key-file go together"),
        (["--cert-file", "/c", "--key-file", "/k"], [:], "a client certificate needs TLS"),
        (["--timeout", "0"], [:], "--timeout 0.0 is out of range"),
        ([], ["ALARMD_BROKER_PROTOCOL": "mqtt5"], "ALARMD_BROKER_PROTOCOL 'mqtt5' is not a protocol"),
    ])
    func mistakes(arguments: [String], environment: [String: String], start: String) {
        #expect {
            try settings(arguments, environment: environment)
        } throws: { error in
            guard case AlarmctlError.usage(let message)? = error as? AlarmctlError else { return false }
            return message.hasPrefix(start)
        }
    }
}

@Suite("preview: the daemon's schedule math")
struct SchedulePreviewTests {
    let berlin = Fixtures.berlin

    @Test("Weekly dates across the spring daylight-saving change")
    func springForward() throws {
        let start = try SchedulePreview.start("2026-03-27T00:00", in: berlin)
        let dates = try SchedulePreview.dates(of: try ScheduleExpression.parse(["07:00 mon,wed,fri"]), after: start, count: 3, in: berlin)
        #expect(dates.map(AlarmJSON.string(from:)) == ["2026-03-27T06:00:00.000Z", "2026-03-30T05:00:00.000Z", "2026-04-01T05:00:00.000Z"])
    }

    @Test("A skipped time is shifted by the gap, a repeated one alerts once")
    func daylightSaving() throws {
        let daily = try ScheduleExpression.parse(["02:30", "daily"])
        let spring = try SchedulePreview.dates(of: daily, after: try SchedulePreview.start("2026-03-28T12:00Z", in: berlin), count: 2, in: berlin)
        #expect(spring.map(AlarmJSON.string(from:)) == ["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"])
        let autumn = try SchedulePreview.dates(of: daily, after: try SchedulePreview.start("2026-10-24T12:00Z", in: berlin), count: 2, in: berlin)
        #expect(autumn.map(AlarmJSON.string(from:)) == ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"])
    }

    @Test("The same dates as ScheduleMath, and a one-off alerts once")
    func sameAsDaemon() throws {
        let start = Fixtures.now
        let weekly = try ScheduleExpression.parse(["06:45", "weekdays"])
        #expect(try SchedulePreview.dates(of: weekly, after: start, count: 20, in: berlin)
            == ScheduleMath.upcomingAlertDates(of: weekly.schedule(in: berlin), after: start, count: 20, in: berlin))
        #expect(try SchedulePreview.dates(of: try ScheduleExpression.parse(["07:00"]), after: start, count: 5, in: berlin).count == 1)
        #expect(try SchedulePreview.dates(of: try ScheduleExpression.parse(["2020-01-01T00:00Z"]), after: start, count: 5, in: berlin).isEmpty)
    }

    @Test("--time-zone takes the zones the node takes: an IANA name, not an offset such as GMT+2", arguments: ["GMT+2", "UTC+2", "GMT-3", "Mars/Olympus", "EST"])
    func zones(refused: String) throws {
        #expect(try SchedulePreview.timeZone("Etc/GMT-2").secondsFromGMT() == 7200)
        let error = #expect(throws: AlarmctlError.self) { try SchedulePreview.timeZone(refused) }
        #expect(error?.message.contains("is not an IANA time zone") == true, "\(String(describing: error))")
    }

    @Test("--from takes ISO 8601 with an offset, or a local time in the preview's zone")
    func start() throws {
        let expected = AlarmJSON.date(from: "2026-11-22T07:00:00Z")
        #expect(try SchedulePreview.start("2026-11-22T07:00:00Z", in: berlin) == expected)
        #expect(try SchedulePreview.start("2026-11-22T07:00:00.000Z", in: berlin) == expected)
        #expect(try SchedulePreview.start("2026-11-22T08:00+01:00", in: berlin) == expected)
        #expect(try SchedulePreview.start("2026-11-22T08:00", in: berlin) == expected)
        #expect(throws: AlarmctlError.self) { try SchedulePreview.start("yesterday", in: berlin) }
    }

    @Test("A bad count or zone is a usage error")
    func mistakes() throws {
        let expression = try ScheduleExpression.parse(["07:00", "daily"])
        for count in [0, -1, 1001] {
            #expect(throws: AlarmctlError.usage("--count \(count) is out of range: list 1 to 1000 dates")) {
                try SchedulePreview.dates(of: expression, after: Fixtures.now, count: count, in: berlin)
            }
        }
        #expect(throws: AlarmctlError.self) { try SchedulePreview.timeZone("Mars/Olympus") }
        #expect(try SchedulePreview.timeZone("Asia/Tokyo").identifier == "Asia/Tokyo")
        #expect(try SchedulePreview.timeZone(nil) == .current)
    }
}
