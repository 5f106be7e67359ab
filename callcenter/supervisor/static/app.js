// The supervisor's page. Everything a caller or a tool said is put in with textContent, never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const live = new Map(); // call_id -> {card, items (the transcript list), call}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
  return node;
}

function seconds(value) {
  return typeof value === "number" ? value.toFixed(2) + " s" : "–";
}

function clock(from, to) {
  const total = Math.max(0, Math.round((to || Date.now() / 1000) - from));
  return Math.floor(total / 60) + ":" + String(total % 60).padStart(2, "0");
}

function when(epoch) {
  return new Date(epoch * 1000).toLocaleString();
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  if (response.status === 401) throw new Error("the page needs the supervisor token: open it with ?token=…");
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// ---- one transcript item: a line said (or typed) by a side, or a tool call ----

function itemNode(item) {
  const node = el("li", item.kind === "tool" ? "tool" : item.who === "caller" ? "caller" : "agent");
  node.dataset.n = item.n === undefined ? "" : item.n;
  if (item.kind === "tool") {
    node.append(el("span", "who", "tool · " + (item.agent || "")));
    node.append(el("code", "tool-call", item.name + " " + JSON.stringify(item.arguments)));
    node.append(toolResult(String(item.result)));
  } else {
    const who = item.who === "caller" ? "Caller" + (item.via ? " (" + item.via + ")" : "") : "Agent";
    node.append(el("span", "who", who));
    node.append(el("span", "text", item.text));
  }
  return node;
}

const SHORT_RESULT = 120;

function toolResult(result) {
  if (result.length <= SHORT_RESULT) return el("pre", "tool-result", "→ " + result);
  const details = el("details", "tool-result"); // a search's products would fill a phone's screen
  details.append(el("summary", "", "→ " + result.slice(0, SHORT_RESULT) + "…"), el("pre", "", result));
  return details;
}

// ---- the per-turn latency chart: stacked bars of speech-to-text, model and speech synthesis ----

function latencyChart(turns) {
  const box = el("div", "latency");
  if (!turns.length) {
    box.append(el("p", "empty", "No turns yet."));
    return box;
  }
  const parts = ["stt_s", "llm_s", "tts_s"]; // coloured by style.css
  const total = (t) => (typeof t.voice_to_voice_s === "number" ? t.voice_to_voice_s
    : parts.reduce((sum, key) => sum + (t[key] || 0), 0));
  const longest = Math.max(...turns.map(total));
  const every = Math.max(1, Math.ceil(longest / 4)); // seconds between grid lines: at most five of them
  const top = Math.max(1, Math.ceil(longest / every)) * every;
  const width = 320, height = 140, left = 28, bottom = 18, plot = height - bottom - 6;
  const step = Math.min(48, (width - left) / turns.length); // one turn is a bar, not a wall
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  const title = svg("title");
  title.textContent = "Voice-to-voice latency per turn";
  chart.append(title);
  for (let tick = 0; tick <= top; tick += every) {
    const y = 6 + plot - (tick / top) * plot;
    chart.append(svg("line", { x1: left, x2: width, y1: y, y2: y, stroke: "#d9dde3" }));
    const label = svg("text", { x: left - 4, y: y + 3, "text-anchor": "end" });
    label.textContent = tick + " s";
    chart.append(label);
  }
  turns.forEach((turn, index) => {
    const x = left + index * step + step * 0.15;
    let y = 6 + plot;
    for (const key of parts) {
      const value = turn[key];
      if (typeof value !== "number" || value <= 0) continue;
      const h = (value / top) * plot;
      y -= h;
      const bar = svg("rect", { x, y, width: step * 0.7, height: h, class: "bar " + key });
      const tip = svg("title");
      tip.textContent = `turn ${index + 1} ${key.replace("_s", "")}: ${seconds(value)}`;
      bar.append(tip);
      chart.append(bar);
    }
    const label = svg("text", { x: x + step * 0.35, y: height - 4, "text-anchor": "middle" });
    label.textContent = String(index + 1);
    chart.append(label);
  });
  const legend = el("div", "legend");
  legend.append(el("span", "stt", "speech to text"), el("span", "llm", "model"), el("span", "tts", "voice"));
  const last = turns[turns.length - 1];
  box.append(chart, legend, el("p", "empty", `last turn: ${seconds(total(last))} voice to voice`));
  return box;
}

// ---- live calls ----

function addLive(call) {
  removeLive(call.call_id);
  const card = el("article", "call");
  card.dataset.callId = call.call_id;
  const head = el("div", "call-head");
  const state = el("span", "chip state", call.state);
  const agent = el("span", "chip agent", call.agent);
  const duration = el("span", "clock", clock(call.started_at));
  head.append(el("span", "caller-id", call.caller), state, agent, duration);
  const buttons = el("div", "buttons");
  const handOver = el("button", "hand-over", "Hand to a person now");
  handOver.type = "button";
  handOver.disabled = !call.can_hand_over;
  if (!call.can_hand_over) handOver.title = "no operator is configured (voice.operator)";
  const hangUp = el("button", "hang-up", "End call");
  hangUp.type = "button";
  handOver.addEventListener("click", () => act("/api/hand-over", call.call_id, handOver));
  hangUp.addEventListener("click", () => act("/api/hang-up", call.call_id, hangUp));
  buttons.append(handOver, hangUp);
  const items = el("ol", "transcript");
  for (const item of call.items) items.append(itemNode(item));
  const turns = el("div", "turns");
  card.append(head, buttons, items, turns);
  document.getElementById("live").append(card);
  const entry = { card, items, state, agent, duration, turns, call };
  live.set(call.call_id, entry);
  drawTurns(entry);
  counted();
}

function drawTurns(entry) {
  entry.turns.replaceChildren(latencyChart(entry.call.turns));
}

function removeLive(callId) {
  const entry = live.get(callId);
  if (entry) entry.card.remove();
  live.delete(callId);
  counted();
}

function counted() {
  document.getElementById("live-count").textContent = String(live.size);
  document.getElementById("no-live").hidden = live.size > 0;
}

async function act(path, callId, button) {
  button.disabled = true;
  try {
    await api(path + "?id=" + encodeURIComponent(callId), { method: "POST" });
  } catch (error) {
    button.disabled = false;
    alert(error.message);
  }
}

function onEvent(event) {
  if (event.event === "snapshot") {
    for (const callId of [...live.keys()]) removeLive(callId);
    for (const call of event.calls) addLive(call);
    return;
  }
  if (event.event === "call") {
    health();
    return addLive(event.call);
  }
  const entry = live.get(event.call_id);
  if (!entry) return;
  switch (event.event) {
    case "item": {
      entry.items.append(itemNode(event.item));
      entry.items.scrollTop = entry.items.scrollHeight;
      break;
    }
    case "unsaid": // the caller talked over these sentences and never heard them
      for (const n of event.items) entry.items.querySelector(`li[data-n="${Number(n)}"]`)?.remove();
      break;
    case "state":
      entry.state.textContent = event.state;
      break;
    case "agent":
      entry.agent.textContent = event.agent;
      break;
    case "turn":
      entry.call.turns.push(event.turn);
      drawTurns(entry);
      break;
    case "ended":
      removeLive(event.call_id);
      showPast(event.call_id, 10); // the call is a past call now
      health();
      break;
  }
}

function connect(delay) {
  const feed = document.getElementById("feed");
  const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/live");
  socket.addEventListener("open", () => { feed.textContent = "live"; delay = 1000; });
  socket.addEventListener("message", (message) => onEvent(JSON.parse(message.data)));
  socket.addEventListener("close", () => {
    feed.textContent = "reconnecting…";
    setTimeout(() => connect(Math.min(delay * 2, 10000)), delay);
  });
}

// ---- past calls ----

async function search(submitted) {
  if (submitted) submitted.preventDefault();
  const form = new FormData(document.getElementById("search"));
  const query = new URLSearchParams();
  if (form.get("number")) query.set("number", form.get("number"));
  if (form.get("disposition")) query.set("disposition", form.get("disposition"));
  if (form.get("date")) {
    const [y, m, d] = String(form.get("date")).split("-").map(Number);
    query.set("since", String(new Date(y, m - 1, d).getTime() / 1000));
    query.set("until", String(new Date(y, m - 1, d + 1).getTime() / 1000));
  }
  const status = document.getElementById("past-status");
  try {
    const { calls } = await api("/api/calls?" + query);
    const list = document.getElementById("past");
    list.replaceChildren(...calls.map(pastRow));
    status.textContent = calls.length ? "" : "No calls match.";
    return calls.map((call) => call.call_id);
  } catch (error) {
    status.textContent = error.message;
    return [];
  }
}

// A call's record is written once its recording is closed, a moment after the call ends: look again a few times.
async function showPast(callId, tries) {
  const found = await search();
  if (!found.includes(callId) && tries > 1) setTimeout(() => showPast(callId, tries - 1), 500);
}

function pastRow(call) {
  const row = el("li");
  row.dataset.callId = call.call_id;
  row.tabIndex = 0;
  row.append(el("span", "started", when(call.started_at)), el("span", "caller-id", call.caller),
    el("span", "disposition " + call.disposition, call.disposition), el("span", "clock", clock(call.started_at, call.ended_at)),
    el("span", "agents", call.agents.join(" → ")));
  const open = () => showCall(call.call_id, row);
  row.addEventListener("click", open);
  row.addEventListener("keydown", (key) => { if (key.key === "Enter") open(); });
  return row;
}

async function showCall(callId, row) {
  document.querySelectorAll("#past li.open").forEach((li) => li.classList.remove("open"));
  row.classList.add("open");
  const detail = document.getElementById("detail");
  detail.dataset.callId = callId;
  detail.replaceChildren(el("p", "empty", "Loading…")); // never the last call's detail under this call's row
  try {
    const call = await api("/api/call?id=" + encodeURIComponent(callId));
    detail.replaceChildren(...callDetail(call));
  } catch (error) {
    detail.replaceChildren(el("p", "empty", error.message));
  }
  detail.hidden = false;
  detail.scrollIntoView({ block: "nearest" });
}

function callDetail(call) {
  const head = el("div", "call-head");
  head.append(el("span", "caller-id", call.caller), el("span", "disposition " + call.disposition, call.disposition),
    el("span", "chip", when(call.started_at)), el("span", "chip", clock(call.started_at, call.ended_at)),
    el("span", "chip", call.end_reason || ""), el("span", "chip", call.agents.join(" → ")));
  const length = typeof call.recording_seconds === "number" ? " (" + clock(0, call.recording_seconds) + ")" : "";
  const close = el("button", "close", "Close");
  close.type = "button";
  close.addEventListener("click", () => {
    document.getElementById("detail").hidden = true;
    document.querySelectorAll("#past li.open").forEach((li) => li.classList.remove("open"));
  });
  head.append(close);
  const nodes = [head, el("h3", "", "Recording" + length)];
  if (call.recording) {
    const audio = el("audio");
    audio.controls = true;
    audio.preload = "none";
    audio.src = "/api/recording?id=" + encodeURIComponent(call.call_id);
    nodes.push(audio);
  } else {
    nodes.push(el("p", "empty no-recording", "No recording" + (call.recording_error ? ": " + call.recording_error : ".")));
  }
  nodes.push(el("h3", "", "Latency per turn"), latencyChart(call.turns));
  const items = el("ol", "transcript");
  for (const item of call.items) items.append(itemNode(item));
  nodes.push(el("h3", "", "Transcript"), items);
  const checks = call.verifications || [];
  if (checks.length) nodes.push(el("h3", "", "Security questions"), table(
    ["After caller turn", "Order", "Outcome", "Answer"],
    checks.map((v) => [v.turn, v.order_number || "–", VERIFICATION[v.outcome] || v.outcome, v.answer || "–"])));
  if (call.order_rows.length) nodes.push(el("h3", "", "Orders placed"), table(
    ["Order", "Status", "Items", "Total"],
    call.order_rows.map((o) => [o.order_number, o.status, o.lines.map((l) => l.quantity + " × " + l.name).join(", "),
      (o.total_cents / 100).toFixed(2)])));
  if (call.return_rows.length) nodes.push(el("h3", "", "Returns registered"), table(
    ["Return", "Order", "Item", "Reason", "Refund"],
    call.return_rows.map((r) => [r.return_number, r.order_number, r.quantity + " × " + r.name, r.reason,
      (r.refund_cents / 100).toFixed(2)])));
  return nodes;
}

// What each outcome of a security question means to a supervisor; the answer itself is never sent to the page.
const VERIFICATION = {
  passed: "passed",
  failed: "wrong answer",
  gave_up: "asked, never answered",
};

function table(headings, rows) {
  const node = el("table");
  const head = el("tr");
  headings.forEach((h) => head.append(el("th", "", h)));
  node.append(head);
  for (const row of rows) {
    const tr = el("tr");
    row.forEach((cell) => tr.append(el("td", "", cell)));
    node.append(tr);
  }
  return node;
}

// ---- the node's health ----

async function health() {
  const box = document.getElementById("health");
  try {
    const h = await api("/api/health");
    box.replaceChildren(el("span", "chip " + h.state, h.state), el("span", "chip", h.node || ""),
      el("span", "chip", h.active_calls + " calls"), el("span", "chip", "CPU " + h.cpu_percent + " %"),
      el("span", "chip", "STT delay " + seconds(h.stt_delay_s)), el("span", "chip", h.refusals + " refused"));
  } catch (error) {
    box.replaceChildren(el("span", "chip", error.message));
  }
}

function tickClocks() {
  for (const entry of live.values()) entry.duration.textContent = clock(entry.call.started_at);
}

document.getElementById("search").addEventListener("submit", search);
connect(1000);
search();
health();
setInterval(health, 5000);
setInterval(tickClocks, 1000);
