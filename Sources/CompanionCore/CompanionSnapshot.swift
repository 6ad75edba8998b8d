import AlarmKit
import AlarmctlCore
import Foundation

/// What the page shows at one moment: every node with its status and its own alarms, and every
/// group's alarms once each, as their presentations say. Sent to the page as JSON on every change;
/// the page counts down by itself from the countdowns' dates, corrected by `serverTime` for its
/// own clock's difference.
public struct CompanionSnapshot: Codable, Sendable, Equatable {
    /// The server's clock when the snapshot was made (ISO 8601, as every time here).
    public var serverTime: String
    /// The nodes in id order, each with the alarms that were not scheduled through a group.
    public var nodes: [NodeView]
    /// The groups in name order, each with its alarms (scheduled through it), once each.
    public var groups: [GroupView]
    /// Why the companion cannot reach the broker (``CompanionHub/brokerProblem``); nil when it can.
    public var broker: String?

    /// The snapshot of `nodes` (the latest status and alarms of each).
    public init(nodes: [String: KnownNode], broker: String? = nil, now: Date) {
        serverTime = AlarmJSON.string(from: now)
        self.broker = broker
        self.nodes = nodes.keys.sorted().map { NodeView(id: $0, state: nodes[$0]!, now: now) }
        groups = GroupView.groups(of: nodes, now: now)
    }
}

/// A group's alarms: each alarm scheduled through the group once, with the members that hold it.
public struct GroupView: Codable, Sendable, Equatable {
    public var name: String
    public var alarms: [AlarmView]

    /// Every group that an alarm of `nodes` was scheduled through. An alarm is shown as its most
    /// pressing state on a member that is online (alerting, then counting down, paused,
    /// scheduled), so that an alert on one member is never hidden behind another's snooze.
    static func groups(of nodes: [String: KnownNode], now: Date) -> [GroupView] {
        var holders: [String: [UUID: [(node: String, document: AlarmDocument, online: Bool)]]] = [:]
        for (node, known) in nodes.sorted(by: { $0.key < $1.key }) {
            for document in known.documents {
                guard let group = document.group else { continue }
                holders[group, default: [:]][document.id, default: []].append((node, document, known.isOnline))
            }
        }
        return holders.keys.sorted().map { name in
            var shown: [UUID: (document: AlarmDocument, view: AlarmView)] = [:]
            for (id, members) in holders[name]! {
                let rank = { (member: (node: String, document: AlarmDocument, online: Bool)) in (member.online ? 0 : 1, member.document.state.urgency) }
                let pick = members.min { rank($0) < rank($1) }!
                let zone = nodes[pick.node]?.zone ?? .current
                var view = AlarmView(pick.document, now: now, timeZone: zone, stale: !pick.online)
                // Members in other zones ring a time of day at their own: the card's time names its zone.
                if Set(members.compactMap { nodes[$0.node]?.status?.timeZone }).count > 1 { view.nextAlert = view.nextAlert.map { "\($0) (\(zone.identifier))" } }
                view.members = members.map { MemberView(node: $0.node, state: $0.online ? $0.document.state.rawValue : "offline") }
                view.membersText = MemberView.text(view.members ?? [])
                shown[id] = (pick.document, view)
            }
            return GroupView(name: name, alarms: Rendering.displayOrder(shown.values.map(\.document), now: now).map { shown[$0.id]!.view })
        }
    }
}

/// A member of a group that holds one of the group's alarms, with the alarm's state there.
public struct MemberView: Codable, Sendable, Equatable {
    public var node: String
    /// The alarm's state on the member (`countdown`, `alerting`, …), or `offline`.
    public var state: String

    /// `on attic, kitchen` when the alarm is in one state on every member, else each member's
    /// state: `attic: alerting · kitchen: counting down`.
    static func text(_ members: [MemberView]) -> String {
        if Set(members.map(\.state)).count <= 1 { return "on " + members.map(\.node).joined(separator: ", ") }
        return members.map { "\($0.node): \($0.state == "countdown" ? "counting down" : $0.state)" }.joined(separator: " · ")
    }
}

extension Alarm.State {
    /// Which state a group's card shows first: the one that needs a hand soonest.
    fileprivate var urgency: Int { [Alarm.State.alerting, .countdown, .paused, .scheduled].firstIndex(of: self)! }
}

/// What the companion knows of one node: its retained status and alarm documents.
public struct KnownNode: Sendable, Equatable {
    public var status: NodeStatus?
    public var documents: [AlarmDocument] = []
    /// The documents before the last update: an alarm just removed is still named by the event
    /// that removed it (silenced, missed), which may come after the update.
    var previousDocuments: [AlarmDocument] = []
    /// True while the companion's own connection to the broker is down: then nothing it knows of
    /// the node is current.
    public var brokerLost = false
    /// The last alerts nobody answered (silenced) and alarms missed, newest first.
    var unanswered: [Unanswered] = []
    struct Unanswered: Sendable, Equatable { var title: String, at: Date, missed: Bool }

    /// True when the node's alarms are current: it is online and the companion reaches the broker.
    var isOnline: Bool { !brokerLost && status?.isOnline == true }

    /// The node's time zone, or this machine's until its status names one.
    var zone: TimeZone { status?.timeZone.flatMap(TimeZone.init(identifier:)) ?? .current }
}

/// One node on the page.
public struct NodeView: Codable, Sendable, Equatable {
    public var id: String
    /// `online`, `offline`, or `unknown` before its status arrives.
    public var state: String
    /// `online since today 07:02`, `offline since Tue 23:10`, `no status yet: …`.
    public var stateText: String
    public var clockSynchronized: Bool?
    public var timeZone: String?
    /// The node's alarms but those of its groups (``GroupView``); while it is not online they
    /// are its last known state and `stale`.
    public var alarms: [AlarmView]
    /// `Tea rang unanswered, today 19:52`, `Work was missed, today 07:00`: the last of the past 12 hours, newest first.
    public var unanswered: [String]

    public init(id: String, state: KnownNode, now: Date) {
        self.id = id
        let zone = state.zone, online = state.isOnline
        self.state = state.brokerLost ? "unknown" : state.status.map { $0.isOnline ? "online" : "offline" } ?? "unknown"
        if state.brokerLost {
            stateText = "not known: the companion cannot reach the broker"
        } else if let status = state.status {
            // To the minute: the seconds of a status change are noise on a display.
            let minute = { (date: Date) in AlarmText.wallClock(Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 60).rounded(.down) * 60), now: now, timeZone: zone) }
            if let since = status.since {
                stateText = "\(self.state) since \(minute(since))"
            } else if !status.isOnline, let lastOnline = status.lastOnline {
                // The will: when the node went away is not known, only since when it had been online.
                stateText = "offline: connection lost (online since \(minute(lastOnline)))"
            } else {
                stateText = self.state
            }
        } else {
            // A node given with --node that the broker never had (a typo) looks just so: say what to check.
            stateText = "no status yet: if this lasts, check the id (--node) and that alarmd runs on this broker"
        }
        clockSynchronized = state.status?.clockSynchronized
        timeZone = state.status?.timeZone
        // What rang while nobody was there, for half a day: someone back home sees it.
        unanswered = state.unanswered.filter { now.timeIntervalSince($0.at) < 43_200 }.map { alert in
            "\(alert.title) \(alert.missed ? "was missed" : "rang unanswered"), \(AlarmText.wallClock(alert.at, now: now, timeZone: zone))"
        }
        alarms = Rendering.displayOrder(state.documents.filter { $0.group == nil }, now: now).map { AlarmView($0, now: now, timeZone: zone, stale: !online) }
    }
}

/// One alarm on the page, as its presentation says for its state.
public struct AlarmView: Codable, Sendable, Equatable {
    public var id: UUID
    /// `scheduled`, `countdown`, `paused` or `alerting`.
    public var state: String
    /// `timer`, `alarm` or `date`.
    public var kind: String
    /// The title the presentation gives for the state (the alert's, the countdown's or the paused one's).
    public var title: String
    /// The tint colour, `#RRGGBB`.
    public var tint: String
    /// A running or paused countdown; nil otherwise.
    public var countdown: CountdownView?
    /// When a scheduled alarm next alerts, in the node's time zone (`tomorrow 07:00`).
    public var nextAlert: String?
    /// `once`, `daily`, `weekdays`, `mon,wed,fri`; nil for a timer.
    public var repeats: String?
    /// The buttons, in the presentation's texts and colours.
    public var buttons: [ButtonView]
    /// True while the node is offline (for a group's alarm: every member that holds it): the
    /// last known state, not counting down, with no buttons.
    public var stale: Bool
    /// For a group's alarm: the members that hold it, with its state on each; nil for a node's own.
    public var members: [MemberView]?
    /// For a group's alarm: its members in words (``MemberView/text(_:)``).
    public var membersText: String?

    public init(_ document: AlarmDocument, now: Date, timeZone: TimeZone, stale: Bool) {
        let presentation = document.configuration.attributes.presentation
        id = document.id
        state = document.state.rawValue
        kind = AlarmText.kind(of: document)
        tint = document.configuration.attributes.tintColor.hex
        repeats = WeekdayList.describe(document.configuration.schedule)
        self.stale = stale
        let cancel = ButtonView(action: .cancel, text: "Cancel", textColor: Color.gray.hex)
        switch document.presentationState {
        case .countdown(let countdown)?:
            title = presentation.countdown?.title ?? presentation.alert.title
            self.countdown = CountdownView(
                total: countdown.totalCountdownDuration, elapsed: countdown.previouslyElapsedDuration,
                startDate: AlarmJSON.string(from: countdown.startDate), fireDate: AlarmJSON.string(from: countdown.fireDate))
            buttons = [ButtonView(action: .pause, button: presentation.countdown?.pauseButton, defaultText: "Pause"), cancel]
        case .paused(let paused)?:
            title = presentation.paused?.title ?? presentation.alert.title
            self.countdown = CountdownView(
                total: paused.totalCountdownDuration, elapsed: paused.previouslyElapsedDuration, startDate: nil, fireDate: nil)
            buttons = [ButtonView(action: .resume, button: presentation.paused?.resumeButton, defaultText: "Resume"), cancel]
        case .alert?:
            title = presentation.alert.title
            buttons = [ButtonView(action: .stop, button: presentation.alert.stopButton, defaultText: "Stop")]
            if let secondary = presentation.alert.secondaryButton {
                // A custom secondary button runs its intent on the node; no command reaches it.
                let action: CompanionAction? = presentation.alert.secondaryButtonBehavior == .custom ? nil : .snooze
                buttons.append(ButtonView(action: action, button: secondary, defaultText: secondary.text))
            }
        case nil:
            title = presentation.alert.title
            buttons = [cancel]
        }
        nextAlert = document.state == .scheduled ? document.nextAlertDate.map { AlarmText.wallClock($0, now: now, timeZone: timeZone) } : nil
        if stale { buttons = [] }
    }
}

/// A countdown's numbers: running when it has dates (ISO 8601), paused otherwise.
public struct CountdownView: Codable, Sendable, Equatable {
    public var total: TimeInterval
    public var elapsed: TimeInterval
    public var startDate: String?
    public var fireDate: String?
}

/// A button: what it does, its text and colour. `action` is nil for a button only the node runs.
public struct ButtonView: Codable, Sendable, Equatable {
    public var action: CompanionAction?
    public var text: String
    public var textColor: String
}

extension ButtonView {
    init(action: CompanionAction?, button: AlarmButton?, defaultText: String) {
        self.init(action: action, text: button?.text ?? defaultText, textColor: (button?.textColor ?? .white).hex)
    }
}

/// The page's actions on an alarm: each is a node operation (`snooze` is `countdown`).
public enum CompanionAction: String, Codable, Sendable, CaseIterable {
    case stop, snooze, pause, resume, cancel

    public var operation: AlarmOperation { self == .snooze ? .countdown : AlarmOperation(rawValue: rawValue)! }
}
