// The management page: logs in with HTTP basic auth against /api/whoami, then reads the API
// every two seconds and draws what it finds. Everything it shows comes from the node.
"use strict";

let auth = sessionStorage.getItem("warren-auth");
let chart = null;

const $ = (id) => document.getElementById(id);
const fmt = (n) => (Math.round(n * 10) / 10).toLocaleString("en");
const enc = encodeURIComponent;

async function api(path, options = {}) {
  const headers = { Authorization: "Basic " + auth };
  if (options.body) headers["Content-Type"] = "application/json";
  const r = await fetch("/api" + path, { ...options, headers });
  if (r.status === 401) throw new Error("login refused");
  const text = await r.text();
  const body = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error(body && body.reason ? body.reason : r.statusText);
  return body;
}

function cell(row, text, numeric) {
  const td = row.insertCell();
  td.textContent = typeof text === "number" ? text.toLocaleString("en") : text;
  if (numeric) td.className = "n";
  return td;
}

function fill(tableId, rows, columns) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const [get, numeric] of columns) cell(tr, get(r), numeric);
  }
  return body;
}

function rate(q, key) {
  const s = q.message_stats || {};
  return fmt(((s[key + "_details"] || {}).rate) || 0);
}

function button(td, label, action) {
  const b = document.createElement("button");
  b.textContent = label;
  b.onclick = action;
  td.appendChild(b);
}

async function peek(q) {
  const msgs = await api(`/queues/${enc(q.vhost)}/${enc(q.name)}/messages?count=20`);
  $("peek-title").textContent = `First ${msgs.length} ready in ${q.name} (left in the queue)`;
  fill("peek-table", msgs, [[(m) => m.position, true], [(m) => m.routing_key],
    [(m) => (m.redelivered ? "yes" : "no")], [(m) => m.payload]]);
  $("peek").hidden = false;
}

async function act(method, path, question) {
  if (!confirm(question)) return;
  try { await api(path, { method }); } catch (e) { alert(e.message); }
  refresh();
}

function showQueues(queues) {
  const body = fill("queues", queues, [[(q) => q.vhost], [(q) => q.name], [(q) => q.type],
    [(q) => q.messages_ready, true], [(q) => q.messages_unacknowledged, true],
    [(q) => q.consumers, true], [(q) => rate(q, "publish"), true],
    [(q) => rate(q, "deliver_get"), true], [(q) => rate(q, "ack"), true]]);
  [...body.rows].forEach((tr, i) => {
    const q = queues[i], td = tr.insertCell(), path = `/queues/${enc(q.vhost)}/${enc(q.name)}`;
    button(td, "peek", () => peek(q).catch((e) => alert(e.message)));
    button(td, "purge", () => act("DELETE", path + "/contents", `Purge ${q.name}?`));
    button(td, "delete", () => act("DELETE", path, `Delete ${q.name}?`));
  });
}

function showOverview(o) {
  $("node").textContent = `${o.product_name} ${o.product_version} on ${o.node}`;
  const alarms = o.alarms || [];
  $("alarms").textContent = alarms.length ? "alarm: " + alarms.join(", ") : "no alarms";
  $("alarms").className = alarms.length ? "alarm" : "ok";
  const t = o.queue_totals, s = o.message_stats;
  $("t-messages").textContent = t.messages.toLocaleString("en");
  $("t-ready").textContent = t.messages_ready.toLocaleString("en");
  $("t-unacked").textContent = t.messages_unacknowledged.toLocaleString("en");
  $("t-queues").textContent = o.object_totals.queues;
  $("t-connections").textContent = o.object_totals.connections;
  $("t-consumers").textContent = o.object_totals.consumers;
  $("r-publish").textContent = fmt(s.publish_details.rate);
  $("r-deliver").textContent = fmt(s.deliver_get_details.rate);
  $("r-ack").textContent = fmt(s.ack_details.rate);
  drawRates(o.rate_history || []);
}

function drawRates(history) {
  const labels = history.map((p) => new Date(p.t).toLocaleTimeString("en-GB"));
  const series = [["publish", "published/s", "#2b7bb9"], ["deliver_get", "delivered/s", "#3a9a4a"],
    ["ack", "acked/s", "#c77d16"]];
  if (!chart) {
    chart = new Chart($("rates"), {
      type: "line",
      data: { labels, datasets: series.map(([, label, color]) => ({ label, data: [],
        borderColor: color, pointRadius: 0, tension: 0.2 })) },
      options: { animation: false, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true } } },
    });
  }
  chart.data.labels = labels;
  series.forEach(([key], i) => { chart.data.datasets[i].data = history.map((p) => p[key]); });
  chart.update();
}

async function refresh() {
  try {
    const [overview, queues, exchanges, connections] = await Promise.all([
      api("/overview"), api("/queues"), api("/exchanges"), api("/connections")]);
    showOverview(overview);
    showQueues(queues);
    fill("exchanges", exchanges, [[(e) => e.vhost], [(e) => e.name || "(default)"],
      [(e) => e.type], [(e) => (e.durable ? "yes" : "no")]]);
    fill("connections", connections, [[(c) => c.name], [(c) => c.user], [(c) => c.vhost],
      [(c) => c.channels, true], [(c) => c.message_stats.publish, true],
      [(c) => c.message_stats.deliver_get, true]]);
    document.body.dataset.refreshed = String(Date.now());
  } catch (e) {
    if (e.message === "login refused") logout(e.message);
  }
}

function logout(why) {
  sessionStorage.removeItem("warren-auth");
  auth = null;
  $("main").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = why || "";
}

async function start() {
  try {
    const me = await api("/whoami");
    $("who").textContent = `${me.name} (${me.tags.join(", ")})`;
  } catch (e) {
    logout(e.message);
    return;
  }
  $("login").hidden = true;
  $("main").hidden = false;
  await refresh();
  setInterval(refresh, 2000);
}

$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  auth = btoa($("user").value + ":" + $("password").value);
  sessionStorage.setItem("warren-auth", auth);
  start();
});

if (auth) start();
else logout();
