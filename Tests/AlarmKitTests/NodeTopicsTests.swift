import AlarmKit
import Foundation
import Testing

@Suite("NodeTopics: reading the topics of one node")
struct NodeTopicsTests {
    let topics = NodeTopics(node: "n1")

    @Test("A request waits for the prompt only when the node may prompt: undetermined, or unknown on a reachable broker")
    func replyWait() {
        let timeout = Duration.seconds(5), prompting = Duration.seconds(45)
        let undetermined = NodeStatus(state: "online", authorization: .notDetermined)
        let authorized = NodeStatus(state: "online", authorization: .authorized)
        for (status, mayPrompt, reachable, wait) in [
            (undetermined, true, true, prompting), (authorized, true, true, timeout), (undetermined, false, true, timeout),
            (nil, true, true, prompting), (nil, true, false, timeout), (nil, false, true, timeout),
        ] as [(NodeStatus?, Bool, Bool, Duration)] {
            #expect(NodeStatus.replyWait(status, mayPrompt: mayPrompt, brokerReachable: reachable, timeout: timeout) == wait,
                    "\(String(describing: status?.authorization)) mayPrompt \(mayPrompt) reachable \(reachable)")
        }
    }

    @Test func readsTheOperationOfItsOwnCommandTopics() {
        #expect(topics.operationName(inTopic: "alarmd/n1/cmd/pause") == "pause")
        #expect(topics.operationName(inTopic: topics.command(.schedule)) == "schedule")
        #expect(topics.operationName(inTopic: "alarmd/n1/cmd/") == "")
        #expect(topics.operationName(inTopic: "alarmd/n1/cmd/späť") == "späť")
    }

    @Test func ignoresOtherNodesAndOtherSections() {
        #expect(topics.operationName(inTopic: "alarmd/n10/cmd/pause") == nil)
        #expect(topics.operationName(inTopic: "alarmd/n1/cmdx/pause") == nil)
        #expect(topics.operationName(inTopic: "alarmd/n1/cmd") == nil)
        #expect(topics.operationName(inTopic: "alarmd/n1/alarms/pause") == nil)
        #expect(topics.operationName(inTopic: "xalarmd/n1/cmd/pause") == nil)
        #expect(topics.operationName(inTopic: "") == nil)
    }

    @Test func readsTheAlarmIDOfAnAlarmTopic() {
        let id = UUID()
        #expect(topics.alarmID(inTopic: topics.alarm(id)) == id)
        #expect(topics.alarmID(inTopic: "alarmd/n1/alarms/not-a-uuid") == nil)
        #expect(topics.alarmID(inTopic: "alarmd/n2/alarms/\(id.uuidString)") == nil)
        #expect(topics.alarmID(inTopic: "alarmd/n1/cmd/\(id.uuidString)") == nil)
    }

    @Test func worksWithoutAPrefix() {
        let bare = NodeTopics(prefix: "", node: "kitchen")
        #expect(bare.operationName(inTopic: "kitchen/cmd/list") == "list")
        #expect(bare.operationName(inTopic: "alarmd/kitchen/cmd/list") == nil)
    }

    @Test func groupTopicsSitUnderGroups() {
        let house = NodeTopics.group("house")
        #expect(house.commandsFilter == "alarmd/groups/house/cmd/+")
        #expect(house.command(.schedule) == "alarmd/groups/house/cmd/schedule")
        #expect(house.operationName(inTopic: "alarmd/groups/house/cmd/list") == "list")
        #expect(house.operationName(inTopic: "alarmd/groups/kids/cmd/list") == nil)
        #expect(topics.operationName(inTopic: "alarmd/groups/house/cmd/list") == nil)
        #expect(NodeTopics.group("house", prefix: "home/alarms").commandsFilter == "home/alarms/groups/house/cmd/+")
    }

    @Test func readsTheNodeOfAStatusTopic() {
        #expect(NodeTopics.statusFilter() == "alarmd/+/status")
        #expect(NodeTopics.nodeID(inStatusTopic: "alarmd/kitchen/status") == "kitchen")
        #expect(NodeTopics.nodeID(inStatusTopic: "home/alarms/kitchen/status", prefix: "home/alarms") == "kitchen")
        #expect(NodeTopics.nodeID(inStatusTopic: "other/kitchen/status") == nil)
        #expect(NodeTopics.nodeID(inStatusTopic: "alarmd/kitchen/events") == nil)
        #expect(NodeTopics.nodeID(inStatusTopic: "alarmd/a b/status") == nil)
    }
}
