// The kafkalite console: polls the admin JSON API and redraws; no page reloads, no
// external assets. The location hash names what is shown: #topics, #topics/NAME,
// #groups, #groups/ID, #schemas, #schemas/SUBJECT, #faults, #brokers, #clients,
// #clients/INSTANCE_ID, and #topics/NAME/PARTITION[/OFFSET] for the message browser at a
// partition and offset.
"use strict";

const state = { view: "topics", topic: null, group: null, subject: null, client: null,
  browse: null };
const VIEWS = ["topics", "groups", "schemas", "faults", "brokers", "clients"];
const POLL_MS = 1000;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, onclick, selected) {
  const tr = el("tr");
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.appendChild(c); tr.appendChild(td); }
    else tr.appendChild(el("td", c, typeof c === "number" ? "num" : undefined));
  }
  if (onclick) { tr.className = "clickable"; tr.addEventListener("click", onclick); }
  if (selected) tr.classList.add("selected");
  return tr;
}

function fill(tableId, rows) {
  const body = document.querySelector(`#${tableId} tbody`);
  body.replaceChildren(...rows);
}

async function api(path, options) {
  const resp = await fetch(`/api/v1${path}`, options);
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}

function ms(n) {
  if (n === null || n === undefined) return "—";
  return n >= 10000 ? `${(n / 1000).toFixed(1)} s` : `${n} ms`;
}

function shown(v, format) {
  if (v === null || v === undefined) return el("span", "null", "muted");
  if (format === "hex") return el("pre", v.hex);
  if (format === "json" && v.json !== undefined) return el("pre", JSON.stringify(v.json, null, 2));
  if (v.text !== undefined) return el("pre", v.text);
  return el("pre", v.hex);
}

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#1d3557", "#e63946", "#2a9d8f", "#f4a261", "#6a4c93", "#8ab17d",
  "#bc6c25", "#457b9d"];

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(v) {
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

// A line chart drawn as SVG into the element with id `id`: one polyline per line
// ({label, value: point => number}), vertical marks at the given times.
function drawChart(id, title, points, lines, marks) {
  const box = document.getElementById(id);
  const W = 520, H = 170, L = 48, R = 8, T = 22, B = 22;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "chart" });
  root.appendChild(svg("text", { x: L, y: 14, class: "chart-title" }, title));
  const t0 = points.length ? points[0].t : 0;
  // Marks after the last point (a rebalance since) widen the time axis to show them.
  const t1 = points.length ? Math.max(points[points.length - 1].t,
    ...(marks || []).map((m) => m.t)) : 1;
  let max = 0;
  for (const p of points) for (const l of lines) max = Math.max(max, l.value(p) || 0);
  max = max || 1;
  const x = (t) => L + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / max) * (H - T - B);
  root.appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B,
    class: "chart-area" }));
  for (const v of [0, max / 2, max]) {
    root.appendChild(svg("text", { x: L - 4, y: y(v) + 4, class: "chart-axis",
      "text-anchor": "end" }, fmt(v)));
  }
  if (points.length) {
    const span = Math.round((t1 - t0) / 1000);
    root.appendChild(svg("text", { x: W - R, y: H - 6, class: "chart-axis",
      "text-anchor": "end" }, `last ${span} s · ${points.length} points`));
  }
  for (const m of marks || []) {
    if (m.t < t0 || m.t > t1) continue;
    const mark = svg("line", { x1: x(m.t), x2: x(m.t), y1: T, y2: H - B, class: "chart-mark" });
    mark.appendChild(svg("title", {}, m.label));
    root.appendChild(mark);
  }
  lines.forEach((l, i) => {
    const colour = COLOURS[i % COLOURS.length];
    if (points.length) {
      root.appendChild(svg("polyline", { fill: "none", stroke: colour, "stroke-width": 1.5,
        class: "chart-line", points: points.map((p) => `${x(p.t).toFixed(1)},${y(l.value(p) || 0).toFixed(1)}`).join(" ") }));
    }
    root.appendChild(svg("text", { x: L + 6 + i * 110, y: H - 6, fill: colour,
      class: "chart-legend" }, l.label));
  });
  box.replaceChildren(root);
}

async function drawTopicCharts(name) {
  const s = await api(`/topics/${encodeURIComponent(name)}/series`);
  drawChart("topic-records-chart", "records/s", s.points, [
    { label: "produced", value: (p) => p.records_in_per_s },
    { label: "consumed", value: (p) => p.records_out_per_s }]);
  drawChart("topic-bytes-chart", "bytes/s", s.points, [
    { label: "in", value: (p) => p.bytes_in_per_s },
    { label: "out (fetched)", value: (p) => p.bytes_out_per_s }]);
}

async function drawGroupCharts(name) {
  const s = await api(`/groups/${encodeURIComponent(name)}/series`);
  const parts = new Set();
  for (const p of s.points) for (const k of Object.keys(p.partitions)) parts.add(k);
  const marks = s.marks.map((m) => ({ t: m.t, label: `rebalance: generation ${m.generation}` }));
  drawChart("group-lag-chart", "lag (records), rebalances marked", s.points,
    [{ label: "total", value: (p) => p.lag }], marks);
  drawChart("group-partition-chart", "lag per partition", s.points,
    [...parts].sort().slice(0, 8).map((k) => ({ label: k, value: (p) => p.partitions[k] })),
    marks);
}

async function drawNodeCharts() {
  const s = await api("/nodes/series");
  const marks = [];
  for (const [node, n] of Object.entries(s.nodes)) {
    for (const m of n.marks) marks.push({ t: m.t, label: `node ${node}: ${m.kind}` });
  }
  drawChart("nodes-requests-chart", "requests/s (all nodes), stops/starts marked",
    s.process.points, [{ label: "requests/s", value: (p) => p.requests_per_s }], marks);
  drawChart("nodes-latency-chart", "mean latency (ms)", s.process.points,
    [{ label: "latency ms", value: (p) => p.latency_ms }], marks);
  // Per broker of --nodes N: its own rate and latency, its own stops, starts and
  // isolations marked.
  const box = document.getElementById("node-charts");
  const wanted = Object.keys(s.nodes);
  if (box.dataset.nodes !== wanted.join(",")) {
    box.replaceChildren(...wanted.map((node) => {
      const div = el("div", "", "charts");
      div.id = `node-${node}-charts`;
      const a = el("div"); a.id = `node-${node}-requests-chart`;
      const b = el("div"); b.id = `node-${node}-latency-chart`;
      div.append(a, b);
      return div;
    }));
    box.dataset.nodes = wanted.join(",");
  }
  for (const [node, n] of Object.entries(s.nodes)) {
    const own = n.marks.map((m) => ({ t: m.t, label: `${m.was} → ${m.kind}` }));
    drawChart(`node-${node}-requests-chart`, `node ${node}: requests/s`, n.points,
      [{ label: "requests/s", value: (p) => p.requests_per_s }], own);
    drawChart(`node-${node}-latency-chart`, `node ${node}: mean latency (ms)`, n.points,
      [{ label: "latency ms", value: (p) => p.latency_ms }], own);
  }
}

async function drawCluster() {
  const c = await api("/cluster");
  document.getElementById("cluster").textContent =
    `cluster ${c.cluster_id} · node ${c.node_id} · ${c.bootstrap} · ${c.topics} topics`;
  const clock = c.clock;
  document.getElementById("clock").textContent = clock
    ? `${clock.manual ? "manual clock" : "clock"} ${new Date(clock.now_ms).toISOString()}` : "";
}

async function drawTopics() {
  const { topics } = await api("/topics");
  fill("topics", topics.map((t) => row(
    [t.name, t.partitions, t.messages, bytes(t.size_bytes)],
    () => { location.hash = `topics/${encodeURIComponent(t.name)}`; },
    t.name === state.topic)));
  const detail = document.getElementById("topic-detail");
  if (!state.topic) { detail.hidden = true; return; }
  const t = await api(`/topics/${encodeURIComponent(state.topic)}`);
  detail.hidden = false;
  document.getElementById("topic-name").textContent = t.name;
  fill("partitions", t.partitions.map((p) => row(
    [p.partition, p.leader, p.replicas.join(", "), p.isr.join(", "), p.log_start_offset,
     p.log_end_offset, bytes(p.size_bytes), p.segments])));
  const sel = document.getElementById("browse-partition");
  if (sel.dataset.topic !== t.name) {
    sel.replaceChildren(...t.partitions.map((p) => {
      const o = el("option", p.partition); o.value = p.partition; return o;
    }));
    sel.dataset.topic = t.name;
  }
  if (state.browse) {
    // A deep link names the partition (and offset) to browse: applied once.
    sel.value = state.browse.partition;
    document.getElementById("browse-offset").value = state.browse.offset ?? "";
    state.browse = null;
  }
  await drawTopicCharts(t.name);
  await drawMessages();
}

async function drawMessages() {
  if (!state.topic) return;
  const partition = document.getElementById("browse-partition").value || 0;
  const offset = document.getElementById("browse-offset").value;
  const format = document.getElementById("browse-format").value;
  const q = offset === "" ? "limit=50" : `offset=${encodeURIComponent(offset)}&limit=50`;
  const err = document.getElementById("browse-error");
  try {
    const m = await api(
      `/topics/${encodeURIComponent(state.topic)}/partitions/${partition}/messages?${q}`);
    err.textContent = "";
    fill("messages", m.messages.map((r) => row([
      r.offset, new Date(r.timestamp).toISOString(), shown(r.key, format),
      // A Schema Registry value is shown decoded, unless hex is asked for.
      r.decoded && format !== "hex" ? el("pre", r.decoded.error ??
        `${r.decoded.schema_type} schema ${r.decoded.schema_id}\n` +
        JSON.stringify(r.decoded.value, null, 2), "decoded") : shown(r.value, format),
      el("pre", r.headers.map((h) => `${h.key}=${h.value ? h.value.text ?? h.value.hex : "null"}`).join("\n")),
    ])));
  } catch (e) {
    err.textContent = e.message;
    fill("messages", []);
  }
}

async function searchMessages() {
  if (!state.topic) return;
  const params = new URLSearchParams();
  const key = document.getElementById("search-key").value;
  const value = document.getElementById("search-value").value;
  const offset = document.getElementById("search-offset").value;
  const time = document.getElementById("search-time").value;
  if (key !== "") params.set("key", key);
  if (value !== "") params.set("value", value);
  if (offset !== "") params.set("offset", offset);
  if (time !== "") params.set("timestamp", String(new Date(time).getTime()));
  const err = document.getElementById("search-error");
  const status = document.getElementById("search-status");
  try {
    const r = await api(`/topics/${encodeURIComponent(state.topic)}/search?${params}`);
    err.textContent = "";
    status.textContent = `${r.matches.length} found; ${r.scanned_records} records ` +
      `(${bytes(r.scanned_bytes)}) read` + (r.bounded
        ? `; stopped at the bound of ${r.limits.records} records or ${bytes(r.limits.bytes)}, ` +
          `resume at ${r.resume_offsets.map((p) => `${p.partition}:${p.offset}`).join(", ")}`
        : "");
    fill("search-results", r.matches.map((m) => row([
      m.partition, m.offset, new Date(m.timestamp).toISOString(), shown(m.key, "text"),
      shown(m.value, "text"),
      m.decoded ? el("pre", m.decoded.error ??
        `${m.decoded.schema_type} schema ${m.decoded.schema_id}\n` +
        JSON.stringify(m.decoded.value, null, 2), "decoded") : el("span", "—", "muted"),
    ])));
  } catch (e) {
    err.textContent = e.message;
    status.textContent = "";
    fill("search-results", []);
  }
}

async function produceMessage() {
  if (!state.topic) return;
  const err = document.getElementById("produce-error");
  const status = document.getElementById("produce-status");
  const key = document.getElementById("produce-key").value;
  const headers = document.getElementById("produce-headers").value;
  try {
    const body = {
      key: key === "" ? null : key,
      value: document.getElementById("produce-value").value,
      headers: headers.trim() === "" ? {} : JSON.parse(headers),
    };
    // No partition: the broker hashes the key as the clients' default partitioner does.
    const partition = document.getElementById("produce-partition").value;
    if (partition !== "") body.partition = Number(partition);
    // With a schema id the value is JSON, encoded by the broker under that schema.
    const schema = document.getElementById("produce-schema").value;
    if (schema !== "") {
      body.schema_id = Number(schema);
      body.value = JSON.parse(body.value);
    }
    const r = await api(`/topics/${encodeURIComponent(state.topic)}/produce`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    err.textContent = "";
    status.textContent = `produced to partition ${r.partition} at offset ${r.offset}`;
  } catch (e) {
    err.textContent = e.message;
    status.textContent = "";
  }
}

async function drawGroups() {
  const { groups } = await api("/groups");
  fill("groups", groups.map((g) => row(
    [g.group_id, g.state, g.generation, g.protocol ?? "", g.members],
    () => { location.hash = `groups/${encodeURIComponent(g.group_id)}`; },
    g.group_id === state.group)));
  const detail = document.getElementById("group-detail");
  if (!state.group) { detail.hidden = true; return; }
  let g;
  try { g = await api(`/groups/${encodeURIComponent(state.group)}`); }
  catch (e) {
    detail.hidden = false;
    document.getElementById("group-name").textContent = state.group;
    document.getElementById("group-summary").textContent = e.message;
    for (const t of ["members", "lag", "history"]) fill(t, []);
    return;
  }
  detail.hidden = false;
  document.getElementById("group-name").textContent = g.group_id;
  await drawGroupCharts(g.group_id);
  const share = document.getElementById("share-detail");
  share.hidden = g.type !== "share";
  if (g.type === "share") { drawShareGroup(g); return; }
  if (g.type === "streams") { drawStreamsGroup(g); return; }
  document.getElementById("group-summary").textContent =
    `${g.state} · generation ${g.generation} · ${g.protocol_type ?? ""} ${g.protocol ?? ""} · ` +
    `${g.members.length} members · leader ${g.leader ?? "none"}`;
  fill("members", g.members.map((m) => row([
    m.member_id + (m.leader ? " (leader)" : ""), m.client_id, m.client_host,
    el("pre", m.assignment.map((a) => a.raw ?? `${a.topic}: ${a.partitions.join(", ")}`).join("\n")),
    ms(m.since_heartbeat_ms),
    m.session_deadline_ms === null ? "—"
      : `${new Date(m.session_deadline_ms).toISOString()} (in ${ms(m.session_remaining_ms)})`,
  ])));
  fill("lag", g.lag.map((l) => row(
    [l.topic, l.partition, l.committed ?? "—", l.log_end_offset ?? "—", l.lag ?? "—",
     l.owner ?? ""])));
  fill("history", g.history.map((h) => row(h.deleted
    ? [h.offset, new Date(h.timestamp).toISOString(), "deleted", "", "", ""]
    : [h.offset, new Date(h.timestamp).toISOString(), h.generation, h.protocol ?? "",
       h.leader ?? "", h.members.join(", ")])));
}

// A share group: members with their epochs and partitions, and per share-partition its
// start and end offsets, in-flight records by state and lag.
function drawShareGroup(g) {
  document.getElementById("group-summary").textContent =
    `${g.state} · share group · group epoch ${g.group_epoch} · assignor ${g.assignor} · ` +
    `${g.members.length} members`;
  fill("members", g.members.map((m) => row([
    m.member_id, m.client_id, m.client_host,
    el("pre", m.assignment.map((a) => `${a.topic}: ${a.partitions.join(", ")}`).join("\n")),
    `epoch ${m.member_epoch}`, "—",
  ])));
  fill("share-partitions", g.share_partitions.map((p) => row(
    [p.topic, p.partition, p.start_offset, p.end_offset, p.in_flight.available,
     p.in_flight.acquired, p.in_flight.acknowledged, p.in_flight.archived,
     p.log_end_offset ?? "—", p.lag ?? "—"])));
  fill("lag", []);
  fill("history", []);
}

// A streams group: members with their processes, epochs and tasks (active, standby,
// warm-up; the target when it differs), and the lag of the partitions its tasks read.
function tasksText(tasks) {
  return tasks.map((t) => `${t.subtopology}:[${t.partitions.join(",")}]`).join("; ") || "—";
}

function drawStreamsGroup(g) {
  document.getElementById("group-summary").textContent =
    `${g.state} · streams group · group epoch ${g.group_epoch} · ` +
    `target assignment epoch ${g.assignment_epoch} · topology epoch ${g.topology_epoch ?? "—"} · ` +
    `assignor ${g.assignor} · ${g.members.length} members`;
  fill("members", g.members.map((m) => {
    const lines = ["active", "standby", "warmup"].map((k) => `${k}: ${tasksText(m.tasks[k])}`);
    if (m.target && tasksText(m.target.active) !== tasksText(m.tasks.active)) {
      lines.push(`target active: ${tasksText(m.target.active)}`);
    }
    return row([
      `${m.member_id} (process ${m.process_id})`, m.client_id, m.client_host,
      el("pre", lines.join("\n")),
      `epoch ${m.member_epoch} · ${m.state}`,
      m.session_deadline_ms === null ? "—"
        : `${new Date(m.session_deadline_ms).toISOString()} (in ${ms(m.session_deadline_ms - g.now_ms)})`,
    ]);
  }));
  fill("lag", g.lag.map((l) => row(
    [l.topic, l.partition, l.committed ?? "—", l.log_end_offset ?? "—", l.lag ?? "—",
     l.owner ?? ""])));
  fill("history", []);
}

async function drawSchemas() {
  const { enabled, subjects } = await api("/schemas");
  document.getElementById("schemas-off").hidden = enabled;
  fill("subjects", subjects.map((s) => {
    const latest = s.versions[s.versions.length - 1];
    return row([s.subject, s.versions.map((v) => v.version).join(", "), latest.type, latest.id],
               () => { location.hash = `schemas/${encodeURIComponent(s.subject)}`; },
               s.subject === state.subject);
  }));
  const detail = document.getElementById("subject-detail");
  const picked = subjects.find((s) => s.subject === state.subject);
  if (!picked) { detail.hidden = true; return; }
  detail.hidden = false;
  document.getElementById("subject-name").textContent = picked.subject;
  fill("versions", picked.versions.slice().reverse().map((v) =>
    row([v.version, v.id, v.type, el("pre", v.schema)])));
}

async function drawFaults() {
  const { rules } = await api("/faults");
  fill("faults", rules.map((r) => {
    const remove = el("button", "remove");
    remove.addEventListener("click", async () => {
      await api(`/faults/${r.id}`, { method: "DELETE" }); refresh();
    });
    const match = [r.group_id && `group=${r.group_id}`, r.topic && `topic=${r.topic}`,
      r.client_id && `client=${r.client_id}`, r.principal && `principal=${r.principal}`]
      .filter(Boolean).join(" ");
    const left = [r.count !== null ? `${r.count}×` : "", r.remaining_ms !== undefined ? ms(r.remaining_ms) : ""]
      .filter(Boolean).join(" ") || "∞";
    return row([r.id, r.api, r.action, r.error ?? (r.delay_ms ? `${r.delay_ms} ms` : ""),
      match, left, r.fired, remove]);
  }));
}

// Every node of the process with a button per action the admin API takes; with one node
// the API refuses and says why.
async function drawBrokers() {
  const { brokers } = await api("/brokers");
  await drawNodeCharts();
  const err = document.getElementById("brokers-error");
  fill("brokers", brokers.map((b) => {
    const buttons = el("span");
    for (const action of ["stop", "start", "isolate", "heal"]) {
      const btn = el("button", action);
      btn.dataset.node = b.node_id;
      btn.dataset.action = action;
      btn.addEventListener("click", async () => {
        try {
          await api(`/brokers/${b.node_id}/${action}`, { method: "POST" });
          err.textContent = "";
        } catch (e) { err.textContent = e.message; }
        refresh();
      });
      buttons.appendChild(btn);
    }
    return row([b.node_id + (b.controller ? " (controller)" : ""),
      b.listeners.map((l) => l.advertised).join(", "), b.rack ?? "", b.status,
      b.leader_partitions, buttons]);
  }));
}

// A line over a series' kept values, in SVG: [[time ms, value], ...].
function sparkline(values) {
  const NS = "http://www.w3.org/2000/svg";
  const w = 160, h = 28;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", w); svg.setAttribute("height", h);
  svg.setAttribute("class", "spark");
  if (values.length < 2) return svg;
  const t0 = values[0][0], t1 = values[values.length - 1][0];
  const vs = values.map((p) => p[1]);
  const lo = Math.min(...vs), hi = Math.max(...vs);
  const x = (t) => (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (w - 2) + 1;
  const y = (v) => h - 1 - (hi === lo ? 0.5 : (v - lo) / (hi - lo)) * (h - 2);
  const line = document.createElementNS(NS, "polyline");
  line.setAttribute("points", values.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "));
  svg.appendChild(line);
  return svg;
}

function number(v) {
  return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, "");
}

async function drawClients() {
  const { clients } = await api("/clients");
  fill("clients", clients.map((c) => {
    const software = [c.software_name, c.software_version].filter(Boolean).join(" ");
    const open = c.client_instance_id
      ? () => { location.hash = `clients/${encodeURIComponent(c.client_instance_id)}`; }
      : null;
    return row([c.client_id ?? "", software, c.address, c.listener, c.principal,
      (c.groups || []).join(", "), new Date(c.connected_since).toLocaleTimeString(),
      c.client_instance_id ?? "—", c.metrics.length], open,
      c.client_instance_id !== null && c.client_instance_id === state.client);
  }));
  const detail = document.getElementById("client-detail");
  detail.hidden = !state.client;
  if (!state.client) return;
  document.getElementById("client-name").textContent = `Client instance ${state.client}`;
  let series = [];
  try {
    ({ series } = await api(`/clients/${encodeURIComponent(state.client)}/metrics`));
  } catch (e) {
    document.getElementById("client-name").textContent = `Client instance ${state.client}: ${e.message}`;
  }
  series.sort((a, b) => a.name.localeCompare(b.name));
  fill("client-metrics", series.map((s) => {
    const last = s.values.length ? s.values[s.values.length - 1][1] : null;
    const attrs = Object.entries(s.attributes || {}).map(([k, v]) => `${k}=${v}`).join(" ");
    return row([s.name, attrs, last === null ? "" : number(last), s.unit ?? "",
      sparkline(s.values)]);
  }));
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  const status = document.getElementById("status");
  try {
    await drawCluster();
    if (state.view === "topics") await drawTopics();
    else if (state.view === "groups") await drawGroups();
    else if (state.view === "schemas") await drawSchemas();
    else if (state.view === "brokers") await drawBrokers();
    else if (state.view === "clients") await drawClients();
    else await drawFaults();
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    status.textContent = `broker unreachable: ${e.message}`;
  } finally {
    busy = false;
  }
}

function route() {
  const [view, name, partition, offset] = (location.hash.slice(1) || "topics").split("/");
  state.view = VIEWS.includes(view) ? view : "topics";
  const picked = name === undefined ? null : decodeURIComponent(name);
  if (state.view === "topics") state.topic = picked;
  state.browse = state.view === "topics" && partition !== undefined
    ? { partition, offset } : null;
  if (state.view === "groups") state.group = picked;
  if (state.view === "schemas") state.subject = picked;
  if (state.view === "clients") state.client = picked;
  for (const v of VIEWS) {
    document.getElementById(`view-${v}`).hidden = v !== state.view;
  }
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === state.view);
  }
  refresh();
}

document.getElementById("browse").addEventListener("submit", (e) => {
  e.preventDefault();
  // The browsed partition and offset become the page's address.
  const partition = document.getElementById("browse-partition").value || 0;
  const offset = document.getElementById("browse-offset").value;
  const hash = `#topics/${encodeURIComponent(state.topic)}/${partition}${offset === "" ? "" : `/${offset}`}`;
  history.replaceState(null, "", hash);
  drawMessages();
});
document.getElementById("reset").addEventListener("submit", async (e) => {
  e.preventDefault();
  const to = document.getElementById("reset-to").value;
  const body = { topic: document.getElementById("reset-topic").value, to };
  if (to === "offset") body.offset = Number(document.getElementById("reset-offset").value || 0);
  if (to === "timestamp") body.timestamp = new Date(document.getElementById("reset-time").value).getTime();
  const err = document.getElementById("reset-error");
  const status = document.getElementById("reset-status");
  try {
    const r = await api(`/groups/${encodeURIComponent(state.group)}/reset-offsets`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    err.textContent = "";
    status.textContent = `reset ${r.topic}: ` +
      r.partitions.map((p) => `${p.partition}→${p.offset}${p.error ? ` (${p.error})` : ""}`).join(", ");
  } catch (ex) {
    status.textContent = "";
    err.textContent = ex.message;
  }
});
document.getElementById("search").addEventListener("submit", (e) => {
  e.preventDefault();
  searchMessages();
});
document.getElementById("produce").addEventListener("submit", (e) => {
  e.preventDefault();
  produceMessage();
});
document.getElementById("browse-format").addEventListener("change", drawMessages);
document.getElementById("browse-partition").addEventListener("change", drawMessages);
window.addEventListener("hashchange", route);
route();
setInterval(refresh, POLL_MS);
