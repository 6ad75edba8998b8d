extension PageAssets {
    /// The page's script: follows the server's event stream, draws the groups' alarms (once each,
    /// with their members) and the nodes with their own, counts down by itself (corrected for this
    /// clock's difference from the server's), and sends the actions with the page's token: a
    /// group's to the group, a node's to the node.
    public static let script = #"""
        "use strict";
        (() => {
          let token = document.querySelector('meta[name="companion-token"]').content;
          const nodesView = document.getElementById("nodes");
          const alertView = document.getElementById("alert");
          const alertList = document.getElementById("alert-list");
          const connection = document.getElementById("connection"), nowView = document.getElementById("now");
          const announcer = document.getElementById("announcer");
          const newForm = document.getElementById("new-alarm");
          const newNode = document.getElementById("new-node");
          const newError = document.getElementById("new-error");
          const newText = document.getElementById("new-text"), newDone = document.getElementById("new-done");
          const RING = 2 * Math.PI * 40;

          let snapshot = null;        // the server's latest state
          let offset = 0;             // server clock minus this clock, in ms
          let connected = false;
          let drawnKey = "";          // what is drawn, to redraw only on a change
          let previousStates = new Map();

          const now = () => Date.now() + offset;
          const seconds = (ms) => Math.max(0, Math.ceil(ms / 1000));

          function clock(total) {
            const d = Math.floor(total / 86400), h = Math.floor(total % 86400 / 3600);
            const m = Math.floor(total % 3600 / 60), s = total % 60;
            const two = (n) => String(n).padStart(2, "0");
            const day = d > 0 ? d + "d " : "";
            return d > 0 || h > 0 ? `${day}${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
          }

          function spoken(total) {
            const h = Math.floor(total / 3600), m = Math.floor(total % 3600 / 60), s = total % 60;
            const parts = [];
            if (h) parts.push(h + (h === 1 ? " hour" : " hours"));
            if (m) parts.push(m + (m === 1 ? " minute" : " minutes"));
            if (!h && (s || !m)) parts.push(s + (s === 1 ? " second" : " seconds"));
            return parts.join(" ") + " left";
          }

          function remainingOf(alarm) {
            const c = alarm.countdown;
            return seconds(c.fireDate ? Date.parse(c.fireDate) - now() : (c.total - c.elapsed) * 1000);
          }

          function element(tag, props = {}, children = []) {
            const node = document.createElement(tag);
            for (const [key, value] of Object.entries(props)) {
              if (key === "class") node.className = value;
              else if (key === "text") node.textContent = value;
              else if (key === "tint") node.style.setProperty("--tint", value);
              else if (key.startsWith("aria-") || key.startsWith("data-") || key === "role") node.setAttribute(key, value);
              else node[key] = value;
            }
            for (const child of children) if (child) node.append(child);
            return node;
          }

          function svg(tag, attributes, children = []) {
            const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
            for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
            node.append(...children);
            return node;
          }

          const ring = (alarm) => svg("svg", { class: "ring", viewBox: "0 0 100 100", "aria-hidden": "true" }, [
            svg("circle", { class: "track", cx: 50, cy: 50, r: 40 }),
            svg("circle", { class: "progress", cx: 50, cy: 50, r: 40, "stroke-dasharray": RING, "data-ring": alarm.id })]);

          // A clock face (a scheduled alarm) or an exclamation mark (alerting), in the tint.
          const badge = (alerting) => svg("svg", { class: "badge", viewBox: "0 0 100 100", "aria-hidden": "true" }, [
            svg("circle", { class: "badge-face", cx: 50, cy: 50, r: 46 }),
            svg("path", { class: "badge-hands", d: alerting ? "M50 26 V58 M50 72 V74" : "M50 24 V50 L68 62" })]);

          // Where an alarm's actions go: its group's for a group's alarm, else its node's.
          function actionsPath(owner, alarm) {
            return alarm.members ? `/api/groups/${encodeURIComponent(owner.name)}` : `/api/nodes/${encodeURIComponent(owner.id)}`;
          }

          // Cancel ends an alarm for good, every repeat too: only a second tap, 0.4 to 4 s after the
          // first, does it, so that a tap meant for the Pause above it on a small touchscreen, or a
          // bouncing one, cancels nothing.
          let armedCancel = null;
          const isArmed = (alarm) => armedCancel && armedCancel.id === alarm.id && Date.now() < armedCancel.at + 4000;

          function actionButton(owner, alarm, button, extraClass) {
            const armed = button.action === "cancel" && isArmed(alarm);
            const label = armed ? "Confirm cancel" : button.action ? button.text : `${button.text} (on the node only)`;
            const b = element("button", {
              type: "button", class: extraClass || "", text: armed ? "Confirm" : button.text,
              "aria-label": `${label}: ${alarm.title}`, "data-key": `${alarm.id}/${button.action || "node"}`,
            });
            b.style.color = button.textColor;
            if (!button.action) b.disabled = true;
            else b.addEventListener("click", () => act(owner, alarm, button.action, b));
            return b;
          }

          // Why nothing can be added: this page cut off, the companion without the broker, or no node online.
          const NO_NODE = {
            cutOff: "This page lost the companion: add it once the page is live again.",
            broker: "The companion cannot reach the broker: no node can take it now.",
            none: "No node is online to add it to.",
          };
          const whyNoNode = () => !connected ? NO_NODE.cutOff : snapshot && snapshot.broker ? NO_NODE.broker : NO_NODE.none;
          const sentence = (text) => text[0].toUpperCase() + text.slice(1) + ".";
          // A stale alarm's reason: this page cut off, the broker out of reach, its node (or a group's members) offline.
          const whyStale = (alarm) => alarm.stale === "cut off" ? "this page lost the companion"
            : snapshot && snapshot.broker ? "the companion cannot reach the broker"
            : alarm.members ? "its members are offline" : "the node is offline";

          // Where an action's error shows: on the alarm's card and on its alert.
          const errorLine = (alarm) => element("p", { class: "error", role: "alert", "data-error": alarm.id });
          const showError = (alarm, text) => document.querySelectorAll(`[data-error="${alarm.id}"]`).forEach((e) => { e.textContent = text; });

          function alarmCard(owner, alarm) {
            const card = element("li", { class: "alarm" + (alarm.stale ? " stale" : ""), tint: alarm.tint, "data-alarm": alarm.id });
            const text = element("div", { class: "alarm-text" }, [element("p", { class: "alarm-title", text: alarm.title })]);
            if (alarm.countdown) {
              card.append(ring(alarm));
              if (alarm.stale) {
                text.append(element("p", { class: "remaining small", text: "not known" }));
                text.append(element("p", { class: "detail", text: whyStale(alarm) }));
              } else {
                text.append(element("p", { class: "remaining", role: "timer", "data-remaining": alarm.id }));
                if (alarm.state === "paused") text.append(element("p", { class: "detail", text: "Paused" }));
              }
            } else {
              card.append(badge(alarm.state === "alerting"));
              text.append(element("p", { class: "remaining small", text: alarm.state === "alerting" ? "Alerting" : alarm.nextAlert || "–" }));
              if (alarm.repeats) text.append(element("p", { class: "detail", text: alarm.repeats === "once" ? "once" : `repeats ${alarm.repeats}` }));
              if (alarm.stale) text.append(element("p", { class: "detail", text: `${whyStale(alarm)}: last known` }));
            }
            if (alarm.members) text.append(element("p", { class: "detail", text: alarm.membersText }));
            text.append(errorLine(alarm));
            card.append(text);
            card.append(element("div", { class: "buttons" }, alarm.buttons.map((button) => actionButton(owner, alarm, button))));
            return card;
          }

          // A node's or a group's section: its heading (`name`, the pill, facts), then its alarms.
          function section(owner, kind, name, pill, pillText, facts) {
            const headingID = `${kind}-${name}`;
            const section = element("section", { class: kind === "group" ? "node group" : "node", "aria-labelledby": headingID });
            section.append(element("div", { class: "node-head" }, [
              element("h2", { id: headingID, text: name }),
              element("span", { class: "pill " + pill, text: pillText }),
              facts.length ? element("p", { class: "node-facts", text: facts.join(" · ") }) : null,
              ...(owner.unanswered || []).map((text) => element("p", { class: "unanswered", text })),
            ]));
            const list = element("ul", { class: "alarms", "aria-label": kind === "group" ? `Alarms of group ${name}` : `Alarms of ${name}` });
            for (const alarm of owner.alarms) list.append(alarmCard(owner, alarm));
            if (kind === "node" && !owner.alarms.length) list.append(element("li", { class: "empty", text: "No alarms." }));
            section.append(list);
            return section;
          }

          const nodeSection = (node) => section(node, "node", node.id, node.state, node.stateText,
            [node.timeZone, node.clockSynchronized != null && `clock ${node.clockSynchronized ? "" : "not "}synchronized`].filter(Boolean));

          // A group's alarms, once each, with the members that hold them.
          const groupSection = (group) => section(group, "group", group.name, "group", "group", []);

          function alertItem(owner, alarm) {
            return element("div", { class: "alert-item", tint: alarm.tint }, [
              element("p", { class: "alert-node", text: alarm.members ? `${owner.name} · ${alarm.membersText}` : owner.id }),
              element("p", { class: "alert-title", text: alarm.title }),
              element("div", { class: "alert-buttons" },
                alarm.buttons.map((button, index) => actionButton(owner, alarm, button, index === 0 ? "stop" : "secondary"))),
              errorLine(alarm),
            ]);
          }

          function draw() {
            const current = (owner) => connected ? owner : {
              ...owner, state: "unknown", stateText: "not known: this page lost the companion",
              alarms: owner.alarms.map((a) => ({ ...a, stale: "cut off", buttons: [] })),
            };
            const nodes = snapshot ? snapshot.nodes.map(current) : [];
            const groups = snapshot ? snapshot.groups.map(current) : [];
            const owners = [...groups, ...nodes];
            const key = JSON.stringify([owners, snapshot && snapshot.broker, armedCancel && armedCancel.id]);
            if (key === drawnKey) return;
            drawnKey = key;
            const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;

            nodesView.replaceChildren(...(nodes.length ? [...groups.map(groupSection), ...nodes.map(nodeSection)]
              : [element("p", { class: "empty", text: snapshot && snapshot.broker ? sentence(snapshot.broker)
                : "No node has published its status yet." })]));
            const alerting = owners.flatMap((o) => o.alarms.filter((a) => a.state === "alerting" && !a.stale).map((a) => [o, a]));
            alertList.replaceChildren(...alerting.map(([n, a]) => alertItem(n, a)));
            const wasHidden = alertView.hidden;
            alertView.hidden = alerting.length === 0;
            // A modal alert: what lies behind it takes no focus (Tab stays on its buttons).
            for (const behind of document.body.children) {
              if (behind !== alertView && behind !== announcer) behind.inert = !alertView.hidden;
            }
            if (alerting.length) alertView.style.setProperty("--tint", alerting[0][1].tint);
            alertList.classList.toggle("several", alerting.length > 1);
            // A tab in the background, or a phone's list of tabs, shows what rings.
            document.title = alerting.length ? `Ringing: ${alerting.map(([, a]) => a.title).join(", ")}` : "Alarms";

            // Only a node that is online can take a new alarm.
            const selected = newNode.value, online = nodes.filter((n) => n.state === "online" && connected);
            newNode.replaceChildren(...online.map((n) => element("option", { value: n.id, text: n.id })));
            if (online.some((n) => n.id === selected)) newNode.value = selected;
            newNode.hidden = online.length < 2;
            if (online.length && Object.values(NO_NODE).includes(newError.textContent)) newError.textContent = "";

            // While the alert covers the page, only its own buttons (a card's Stop has the same key).
            const target = focused && (alertView.hidden ? document : alertList).querySelector(`[data-key="${CSS.escape(focused)}"]`);
            // A new alert, or one stopped of several, puts the focus on a Stop.
            if (!alertView.hidden && (wasHidden || !target)) alertList.querySelector("button.stop")?.focus();
            else if (target) target.focus();
            announceChanges(owners);
            tick();
          }

          function announceChanges(owners) {
            const states = new Map();
            const said = [];
            for (const o of owners) for (const a of o.alarms) {
              states.set(a.id, a.state);
              const before = previousStates.get(a.id);
              if (before && before !== a.state && !a.stale) said.push(`${a.title}: ${a.state}`);
            }
            previousStates = states;
            if (said.length) announcer.textContent = said.join(". ");
          }

          function tick() {
            // The time here (this device's zone), on the companion's clock: a bedside screen is a clock too.
            const time = new Date(now()).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
            if (nowView.textContent !== time) nowView.textContent = time;
            if (!snapshot || !connected) return;
            for (const o of [...snapshot.groups, ...snapshot.nodes]) for (const a of o.alarms) {
              if (!a.countdown || a.stale) continue;
              const left = remainingOf(a);
              const label = document.querySelector(`[data-remaining="${a.id}"]`);
              if (label && label.textContent !== clock(left)) {
                label.textContent = clock(left);
                label.setAttribute("aria-label", spoken(left));
              }
              const progress = document.querySelector(`[data-ring="${a.id}"]`);
              if (progress) {
                const fraction = a.countdown.total > 0 ? Math.min(1, left / a.countdown.total) : 0;
                progress.setAttribute("stroke-dashoffset", String(RING * (1 - fraction)));
              }
            }
          }

          async function post(url, body) {
            const headers = { "X-Companion-Token": token };
            if (body) headers["Content-Type"] = "application/json";
            const response = await fetch(url, { method: "POST", headers, body: body ? JSON.stringify(body) : undefined, credentials: "same-origin" });
            if (response.status === 401) { location.reload(); return null; }
            const reply = await response.json().catch(() => null); // null when not JSON
            if (!response.ok || !reply || !reply.ok) {
              throw new Error(reply && reply.error ? reply.error.message : `the companion answered ${response.status}`);
            }
            return reply;
          }

          async function act(owner, alarm, action, button) {
            if (action === "cancel" && !isArmed(alarm)) {
              armedCancel = { id: alarm.id, at: Date.now() };
              draw();
              setTimeout(() => { if (armedCancel && Date.now() >= armedCancel.at + 4000) { armedCancel = null; draw(); } }, 4100);
              return;
            }
            if (action === "cancel" && Date.now() - armedCancel.at < 400) return;
            armedCancel = null;
            button.disabled = true;
            showError(alarm, "");
            try {
              await post(`${actionsPath(owner, alarm)}/alarms/${alarm.id}/${action}`);
            } catch (error) {
              draw(); // a Cancel that was armed reads Cancel again, before the error goes on the cards drawn
              showError(alarm, error.message);
              button.disabled = false;
            }
          }

          newText.addEventListener("input", () => { newError.textContent = newDone.textContent = ""; });

          newForm.addEventListener("submit", async (event) => {
            event.preventDefault();
            newError.textContent = newDone.textContent = "";
            const node = newNode.value;
            if (!node) { newError.textContent = whyNoNode(); return; }
            try {
              await post(`/api/nodes/${encodeURIComponent(node)}/alarms`, { text: newText.value });
              // The new card may be far above on a phone: say that it was added, and where.
              newDone.textContent = `Added to ${node}: ${newText.value}`;
              newText.value = "";
            } catch (error) {
              newError.textContent = error.message;
            }
          });

          function follow() {
            const events = new EventSource("/api/events");
            const live = () => {
              connected = true;
              const problem = snapshot && snapshot.broker;
              connection.textContent = problem ? sentence(problem) : "Live";
              connection.classList.toggle("lost", Boolean(problem));
            };
            events.onopen = live;
            events.addEventListener("token", (message) => { token = message.data; });
            events.onmessage = (message) => {
              const next = JSON.parse(message.data);
              offset = Date.parse(next.serverTime) - Date.now();
              snapshot = next;
              live();
              draw();
            };
            events.onerror = () => {
              // Closed for good, on an answer that was not the stream: a sign-in lost in a restart
              // (401) reloads to the password; anything else (a proxy's 502) is tried again.
              if (events.readyState === EventSource.CLOSED) {
                fetch("/api/state", { credentials: "same-origin" }).then((r) => r.status === 401 ? location.reload() : setTimeout(follow, 3000),
                  () => setTimeout(follow, 3000));
              }
              connected = false;
              connection.textContent = "Connection to the companion lost: reconnecting…";
              connection.classList.add("lost");
              draw();
            };
          }

          follow();
          setInterval(tick, 250);
        })();
        """#
}
