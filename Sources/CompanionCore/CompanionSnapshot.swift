import AlarmKit
import AlarmctlCore
import Foundation

/// What the page shows at one moment: every node with its status and its alarms as their
/// presentations say. Sent to the page as JSON on every change; the page counts down by itself
/// from the countdowns' dates, corrected by `serverTime` for its own clock's difference.
public struct CompanionSnapshot: Codable, Sendable, Equatable {
    /// The server's clock when the snapshot was made (ISO 8601, as every time here).
    public var serverTime: String
    public var nodes: [NodeView]

    /// The snapshot of `nodes` (the latest status and alarms of each), nodes in id order.
    public init(nodes: [String: KnownNode], now: Date) {
        serverTime = AlarmJSON.string(from: now)
        self.nodes = nodes.keys.sorted().map { NodeView(id: $0, state: nodes[$0]!, now: now) }
    }
}

/// What the companion knows of one node: its retained status and alarm documents.
public struct KnownNode: Sendable, Equatable {
    public var status: NodeStatus?
    public var documents: [AlarmDocument]
    /// True while the companion's own connection to the broker is down: then nothing it knows of
    /// the node is current.
    public var brokerLost: Bool

    public init(status: NodeStatus? = nil, documents: [AlarmDocument] = [], brokerLost: Bool = false) {
        self.status = status
        self.documents = documents
        self.brokerLost = brokerLost
    }
}

/// One node on the page.
public struct NodeView: Codable, Sendable, Equatable {
    public var id: String
    /// `online`, `offline`, or `unknown` before its status arrives.
    public var state: String
    /// `online since today 07:02`, `offline since Tue 23:10`, `no status yet`.
    public var stateText: String
    public var clockSynchronized: Bool?
    public var timeZone: String?
    /// The node's alarms; while it is not online they are its last known state and `stale`.
    public var alarms: [AlarmView]

    public init(id: String, state: KnownNode, now: Date) {
        self.id = id
        let zone = state.status?.timeZone.flatMap(TimeZone.init(identifier:)) ?? .current
        let online = !state.brokerLost && state.status?.isOnline == true
        self.state = state.brokerLost ? "unknown" : state.status.map { $0.isOnline ? "online" : "offline" } ?? "unknown"
        if state.brokerLost {
            stateText = "not known: the companion cannot reach the broker"
        } else if let status = state.status {
            // To the minute: the seconds of a status change are noise on a display.
            let since = (status.isOnline ? status.since : status.since ?? status.lastOnline).map {
                " since \(AlarmText.wallClock(Date(timeIntervalSince1970: ($0.timeIntervalSince1970 / 60).rounded(.down) * 60), now: now, timeZone: zone))"
            } ?? ""
            stateText = "\(self.state)\(since)"
        } else {
            stateText = "no status yet"
        }
        clockSynchronized = state.status?.clockSynchronized
        timeZone = state.status?.timeZone
        alarms = Rendering.displayOrder(state.documents).map { AlarmView($0, now: now, timeZone: zone, stale: !online) }
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
    /// True while the node is offline: the last known state, not counting down, with no buttons.
    public var stale: Bool

    public init(_ document: AlarmDocument, now: Date, timeZone: TimeZone, stale: Bool) {
        let presentation = document.configuration.attributes.presentation
        id = document.id
        state = document.state.rawValue
        kind = AlarmText.kind(of: document)
        tint = document.configuration.attributes.tintColor.hex
        repeats = document.configuration.schedule == nil ? nil : AlarmText.repeats(of: document)
        self.stale = stale
        let cancel = ButtonView(action: .cancel, text: "Cancel", textColor: Color.gray.hex)
        switch document.presentationState {
        case .countdown(let countdown)?:
            title = presentation.countdown?.title ?? presentation.alert.title
            self.countdown = CountdownView(
                total: countdown.totalCountdownDuration, elapsed: countdown.previouslyElapsedDuration,
                startDate: AlarmJSON.string(from: countdown.startDate), fireDate: AlarmJSON.string(from: countdown.fireDate))
            let pause = presentation.countdown?.pauseButton
            buttons = [ButtonView(action: .pause, button: pause, defaultText: "Pause"), cancel]
        case .paused(let paused)?:
            title = presentation.paused?.title ?? presentation.alert.title
            self.countdown = CountdownView(
                total: paused.totalCountdownDuration, elapsed: paused.previouslyElapsedDuration, startDate: nil, fireDate: nil)
            buttons = [ButtonView(action: .resume, button: presentation.paused?.resumeButton, defaultText: "Resume"), cancel]
        case .alert?:
            title = presentation.alert.title
            countdown = nil
            var alertButtons = [ButtonView(action: .stop, button: presentation.alert.stopButton, defaultText: "Stop")]
            if let secondary = presentation.alert.secondaryButton {
                // A custom secondary button runs its intent on the node; no command reaches it.
                let action: CompanionAction? = presentation.alert.secondaryButtonBehavior == .custom ? nil : .snooze
                alertButtons.append(ButtonView(action: action, button: secondary, defaultText: secondary.text))
            }
            buttons = alertButtons
        case nil:
            title = presentation.alert.title
            countdown = nil
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

    public init(action: CompanionAction?, text: String, textColor: String) {
        self.action = action
        self.text = text
        self.textColor = textColor
    }

    init(action: CompanionAction?, button: AlarmButton?, defaultText: String) {
        self.init(action: action, text: button?.text ?? defaultText, textColor: (button?.textColor ?? .white).hex)
    }
}

/// The page's actions on an alarm: each is a node operation (`snooze` is `countdown`).
public enum CompanionAction: String, Codable, Sendable, CaseIterable {
    case stop, snooze, pause, resume, cancel

    public var operation: AlarmOperation {
        switch self {
        case .stop: .stop
        case .snooze: .countdown
        case .pause: .pause
        case .resume: .resume
        case .cancel: .cancel
        }
    }
}
