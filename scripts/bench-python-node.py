#!/usr/bin/env python3
"""A plain Python alarm node: the baseline alarmd-bench sets beside alarmd's command rows.

It holds the alarms of STATE_FILE ({"alarms": [...]}, as alarmd's `list` reply gives them) in a dict,
answers `list`, `pause` and `resume` on BASE/cmd/<op> in alarmd's reply shape (to the MQTT 5 response
topic with its correlation data, or to "replyTo" with "correlationID"), and for each change writes the
state file atomically, replies, then publishes the alarm's retained document and an event, as alarmd does.
Usage: bench-python-node.py PORT BASE STATE_FILE   (needs paho-mqtt 2)
"""
import datetime, json, os, socket, sys
import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

port, base, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(path) as f:
    alarms = {alarm["id"]: alarm for alarm in json.load(f)["alarms"]}


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def save():
    temporary, data = path + ".tmp", json.dumps({"alarms": list(alarms.values())})
    with open(temporary, "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(temporary, path)
    folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    os.fsync(folder)
    os.close(folder)


def change(op, alarm):
    """Pauses or resumes a timer; returns the event's name, or None if the state does not allow it."""
    shown, now = alarm.get("presentationState") or {}, datetime.datetime.now(datetime.timezone.utc)
    total, elapsed = shown.get("totalCountdownDuration"), shown.get("previouslyElapsedDuration", 0)
    if op == "pause" and alarm["state"] == "countdown":
        started = datetime.datetime.fromisoformat(shown["startDate"].replace("Z", "+00:00"))
        alarm["presentationState"] = {"mode": "paused", "totalCountdownDuration": total,
                                      "previouslyElapsedDuration": elapsed + (now - started).total_seconds()}
        alarm["state"], alarm["nextAlertDate"] = "paused", None
        return "paused"
    if op == "resume" and alarm["state"] == "paused":
        fire = iso(now + datetime.timedelta(seconds=total - elapsed))
        alarm["presentationState"] = {"mode": "countdown", "totalCountdownDuration": total,
                                      "previouslyElapsedDuration": elapsed, "startDate": iso(now), "fireDate": fire}
        alarm["state"], alarm["nextAlertDate"] = "countdown", fire
        return "resumed"
    return None


def on_connect(client, userdata, flags, reason, properties):
    client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.subscribe(base + "/cmd/+", qos=1)
    client.publish(base + "/status", json.dumps({"state": "online"}), qos=1, retain=True)


def on_message(client, userdata, message):
    op = message.topic.rsplit("/", 1)[1]
    try:
        request = json.loads(message.payload or b"{}")
    except ValueError:
        request = {}
    reply_to = getattr(message.properties, "ResponseTopic", None) or request.get("replyTo")
    event, alarm = None, alarms.get(request.get("id"))
    if op == "list":
        reply = {"ok": True, "alarms": list(alarms.values())}
    elif op not in ("pause", "resume"):
        reply = {"ok": False, "error": {"code": "badRequest", "message": "unknown operation " + op}}
    elif alarm is None:
        reply = {"ok": False, "error": {"code": "notFound", "message": "no alarm has that id"}}
    elif (event := change(op, alarm)) is None:
        reply = {"ok": False, "error": {"code": "invalidState", "message": op + " is not allowed now"}}
    else:
        save()
        reply = {"ok": True, "alarm": alarm}
    properties = Properties(PacketTypes.PUBLISH)
    if getattr(message.properties, "CorrelationData", None) is not None:
        properties.CorrelationData = message.properties.CorrelationData
    elif "correlationID" in request:
        reply["correlationID"] = request["correlationID"]
    if reply_to:
        client.publish(reply_to, json.dumps(reply), qos=1, properties=properties)
    if event:
        now = iso(datetime.datetime.now(datetime.timezone.utc))
        client.publish(f"{base}/alarms/{alarm['id']}", json.dumps(alarm), qos=1, retain=True)
        client.publish(base + "/events", json.dumps({"event": event, "alarmID": alarm["id"], "at": now}), qos=1)


client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="python-node", protocol=mqtt.MQTTv5)
client.on_connect, client.on_message = on_connect, on_message
client.connect("127.0.0.1", port, keepalive=15)
client.loop_forever()
