"use strict";
// The dashboard: events per second by type, a world map of geotagged
// statuses, trending tags, the server's own figures, and a filter stream
// whose box is drawn on the map. Drawn on canvases and written with
// textContent only; the map is COAST (coast.js). No library.
const dashboard = (() => {
  const el = (id) => document.getElementById(id);
  const TYPES = [
    ["status", "#1c7ed6"], ["reply", "#7048e8"], ["repost", "#2b8a3e"],
    ["like", "#e8590c"], ["delete", "#868e96"], ["other", "#ced4da"],
  ];
  const SECONDS = 60;
  const POINT_LIFE = 120e3;
  let getToken = null;
  let firehose = null, filter = null;
  let buckets = [];          // [{second, counts: {type: n}}], oldest first
  let total = 0;
  let points = [];           // [{lon, lat, at, hit}]
  let box = null;            // [sw_lon, sw_lat, ne_lon, ne_lat]
  let drag = null;
  let land = null;           // the coastline drawn once, offscreen
  let timers = [];
  let lastSent = null;

  function kind(data) {
    if (data.type === "status") {
      if (data.status.repost_of) return "repost";
      return data.status.reply_to ? "reply" : "status";
    }
    return TYPES.some(([t]) => t === data.type) ? data.type : "other";
  }

  function count(type) {
    const second = Math.floor(Date.now() / 1000);
    let last = buckets[buckets.length - 1];
    if (!last || last.second !== second) {
      last = { second, counts: {} };
      buckets.push(last);
      while (buckets.length && buckets[0].second <= second - SECONDS) buckets.shift();
    }
    last.counts[type] = (last.counts[type] || 0) + 1;
    total += 1;
  }

  function drawChart() {
    const c = el("chart");
    const g = c.getContext("2d");
    const w = c.width, h = c.height, pad = 22;
    g.clearRect(0, 0, w, h);
    const now = Math.floor(Date.now() / 1000);
    const per = new Map(buckets.map((b) => [b.second, b.counts]));
    let max = 1;
    for (const counts of per.values()) max = Math.max(max, Object.values(counts).reduce((a, b) => a + b, 0));
    const bw = (w - pad) / SECONDS;
    for (let i = 0; i < SECONDS; i++) {
      const counts = per.get(now - SECONDS + 1 + i) || {};
      let y = h - pad;
      for (const [type, color] of TYPES) {
        const n = counts[type] || 0;
        if (!n) continue;
        const bh = (n / max) * (h - 2 * pad);
        g.fillStyle = color;
        g.fillRect(pad + i * bw, y - bh, Math.max(1, bw - 1), bh);
        y -= bh;
      }
    }
    g.strokeStyle = "#adb5bd";
    g.beginPath(); g.moveTo(pad, h - pad); g.lineTo(w, h - pad); g.stroke();
    g.fillStyle = "#667";
    g.font = "11px system-ui, sans-serif";
    g.fillText(String(max), 2, pad);
    g.fillText("0", 2, h - pad);
    g.fillText("-60 s", pad, h - 6);
    g.fillText("now", w - 24, h - 6);
    const recent = buckets.filter((b) => b.second > now - 6 && b.second < now);
    const sum = recent.reduce((a, b) => a + Object.values(b.counts).reduce((x, y) => x + y, 0), 0);
    el("dash-rate").textContent = (sum / 5).toFixed(1);
    c.dataset.total = String(total);
    c.dataset.seconds = String(buckets.length);
  }

  const xOf = (lon, w) => ((lon + 180) / 360) * w;
  const yOf = (lat, h) => ((90 - lat) / 180) * h;

  function drawLand(w, h) {
    land = document.createElement("canvas");
    land.width = w; land.height = h;
    const g = land.getContext("2d");
    g.fillStyle = "#e7f1f8";
    g.fillRect(0, 0, w, h);
    g.fillStyle = "#d5dbe1";
    g.strokeStyle = "#b8c1ca";
    for (const ring of COAST) {
      // A ring that crosses the antimeridian (Russia, Fiji) is drawn as
      // pieces, each closed along the map's edge, not across the world.
      g.beginPath();
      for (let i = 0; i < ring.length; i += 2) {
        const x = xOf(ring[i] / 10, w), y = yOf(ring[i + 1] / 10, h);
        const jump = i > 0 && Math.abs(ring[i] - ring[i - 2]) > 1800;
        if (i === 0 || jump) g.moveTo(x, y); else g.lineTo(x, y);
      }
      g.fill();
      g.stroke();
    }
  }

  function drawMap() {
    const c = el("map");
    const g = c.getContext("2d");
    const w = c.width, h = c.height;
    if (!land) drawLand(w, h);
    g.drawImage(land, 0, 0);
    const now = Date.now();
    points = points.filter((p) => now - p.at < POINT_LIFE);
    for (const p of points) {
      const fade = 1 - (now - p.at) / POINT_LIFE;
      g.globalAlpha = 0.25 + 0.75 * fade;
      g.fillStyle = p.hit ? "#d9480f" : "#1c7ed6";
      g.beginPath();
      g.arc(xOf(p.lon, w), yOf(p.lat, h), p.hit ? 4 : 2.5, 0, 2 * Math.PI);
      g.fill();
    }
    g.globalAlpha = 1;
    const shown = drag ? toBox(drag.from, drag.to) : box;
    if (shown) {
      const [x0, y0, x1, y1] = [xOf(shown[0], w), yOf(shown[3], h), xOf(shown[2], w), yOf(shown[1], h)];
      g.strokeStyle = "#d9480f";
      g.lineWidth = 2;
      g.setLineDash(drag ? [5, 4] : []);
      g.strokeRect(x0, y0, x1 - x0, y1 - y0);
      g.setLineDash([]);
      g.lineWidth = 1;
    }
    c.dataset.points = String(points.length);
    c.dataset.hits = String(points.filter((p) => p.hit).length);
  }

  // Pointer position on the map as [lon, lat].
  function where(ev) {
    const c = el("map");
    const r = c.getBoundingClientRect();
    const lon = ((ev.clientX - r.left) / r.width) * 360 - 180;
    const lat = 90 - ((ev.clientY - r.top) / r.height) * 180;
    return [Math.max(-180, Math.min(180, lon)), Math.max(-90, Math.min(90, lat))];
  }

  function toBox(a, b) {
    const r = (v) => Math.round(v * 100) / 100;
    return [r(Math.min(a[0], b[0])), r(Math.min(a[1], b[1])), r(Math.max(a[0], b[0])), r(Math.max(a[1], b[1]))];
  }

  function addPoint(s, hit) {
    if (typeof s.lat !== "number" || typeof s.lon !== "number") return;
    points.push({ lon: s.lon, lat: s.lat, at: Date.now(), hit });
    if (points.length > 2000) points.splice(0, points.length - 2000);
  }

  function item(s) {
    const li = document.createElement("li");
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = "@" + s.login + " · " + new Date(s.posted * 1000).toLocaleTimeString() +
      (typeof s.lat === "number" ? " · " + s.lat.toFixed(2) + ", " + s.lon.toFixed(2) : "");
    const body = document.createElement("div");
    body.className = "message";
    body.textContent = s.repost_of ? "reposted " + s.repost_of : s.message;
    li.append(meta, body);
    if (typeof s.lat === "number") { li.dataset.lat = String(s.lat); li.dataset.lon = String(s.lon); }
    return li;
  }

  function prepend(ul, li, keep) {
    ul.prepend(li);
    while (ul.children.length > keep) ul.lastChild.remove();
  }

  // `fresh`: after a refusal, ask for a token again (the demo's is renewed).
  async function open(path, params, onData, onState, fresh) {
    const q = new URLSearchParams(params);
    q.set("access_token", await getToken(fresh));
    const es = new EventSource(path + "?" + q.toString());
    es.onopen = () => onState("live");
    es.onerror = () => onState(es.readyState === EventSource.CLOSED ? "refused" : "reconnecting");
    for (const type of ["status", "delete", "like", "repost", "mention", "follow", "unfollow", "user", "warning", "disconnect"]) {
      es.addEventListener(type, (ev) => onData(JSON.parse(ev.data)));
    }
    return es;
  }

  function onFirehose(data) {
    count(kind(data));
    if (data.type === "status") {
      addPoint(data.status, false);
      if (!data.status.repost_of) prepend(el("dash-live"), item(data.status), 30);
    }
  }

  async function openFirehose(kindName, fresh) {
    const params = kindName === "sample" ? { rate: "1" } : {};
    let opened = false;
    firehose = await open("/api/v1/stream/" + kindName, params, onFirehose, (state) => {
      if (state === "live") opened = true;
      el("dash-source").textContent = "(" + (kindName === "sample" ? "sample stream, 100 %" : "firehose") + ": " + state + ")";
      if (state === "refused" && !opened && kindName === "firehose") {
        firehose.close();
        openFirehose("sample");
      } else if (state === "refused") {
        // A token renewed (the demo's) or a server back: try again soon.
        firehose.close();
        timers.push(setTimeout(() => openFirehose(kindName, true), 3000));
      }
    }, fresh);
  }

  async function applyFilter() {
    if (filter) { filter.close(); filter = null; }
    const params = {};
    if (el("dash-track").value.trim()) params.track = el("dash-track").value.trim();
    if (el("dash-follow").value.trim()) params.follow = el("dash-follow").value.trim();
    if (el("dash-box").value.trim()) params.locations = el("dash-box").value.trim();
    const parts = el("dash-box").value.split(",").map(Number);
    box = parts.length === 4 && parts.every((n) => !Number.isNaN(n)) ? parts : null;
    el("dash-filtered").replaceChildren();
    if (!Object.keys(params).length) { el("dash-filter-info").textContent = "no filter"; return; }
    el("dash-filter-info").textContent = "opening the filter stream";
    filter = await open("/api/v1/stream/filter", params, (data) => {
      if (data.type === "status") {
        addPoint(data.status, true);
        prepend(el("dash-filtered"), item(data.status), 50);
      } else if (data.type === "warning" || data.type === "disconnect") {
        el("dash-filter-info").textContent = data.type + ": " + data.code;
      }
    }, (state) => {
      el("dash-filter-info").textContent = "filter stream " + state + " (" + new URLSearchParams(params).toString() + ")";
    });
  }

  async function figures() {
    try {
      const text = await (await fetch("/metrics")).text();
      let clients = 0, sent = 0;
      for (const line of text.split("\n")) {
        if (line.startsWith("firehose_stream_connections")) clients += Number(line.split(" ").pop()) || 0;
        else if (/^firehose_events_sent(_total)?[ {]/.test(line)) sent += Number(line.split(" ").pop()) || 0;
      }
      const now = Date.now();
      el("dash-clients").textContent = String(clients);
      if (lastSent) el("dash-deliveries").textContent = ((sent - lastSent.sent) / ((now - lastSent.at) / 1000)).toFixed(1);
      lastSent = { sent, at: now };
    } catch (e) { /* the next round */ }
  }

  async function trends() {
    try {
      const top = await (await fetch("/api/v1/trends/tags?window=3600&limit=8")).json();
      el("dash-trends").replaceChildren(...top.map((t) => {
        const li = document.createElement("li");
        li.textContent = "#" + t.tag + " (" + t.count + ")";
        return li;
      }));
    } catch (e) { /* the next round */ }
  }

  function legend() {
    el("chart-legend").replaceChildren(...TYPES.map(([type, color]) => {
      const span = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = color;
      span.append(swatch, document.createTextNode(type));
      return span;
    }));
  }

  const map = el("map");
  map.addEventListener("pointerdown", (ev) => { drag = { from: where(ev), to: where(ev) }; map.setPointerCapture(ev.pointerId); });
  map.addEventListener("pointermove", (ev) => { if (drag) drag.to = where(ev); });
  map.addEventListener("pointerup", (ev) => {
    if (!drag) return;
    drag.to = where(ev);
    const b = toBox(drag.from, drag.to);
    drag = null;
    if (b[2] - b[0] < 0.5 || b[3] - b[1] < 0.5) return;
    el("dash-box").value = b.join(",");
    applyFilter();
  });
  el("dash-filter").onclick = applyFilter;
  el("dash-clear").onclick = () => {
    for (const id of ["dash-track", "dash-follow", "dash-box"]) el(id).value = "";
    applyFilter();
  };

  function stop() {
    for (const es of [firehose, filter]) if (es) es.close();
    firehose = filter = null;
    for (const t of timers) { clearInterval(t); clearTimeout(t); }
    timers = [];
  }

  // Starts (or restarts) with a token from `tokenSource` (an async
  // function: the demo's is renewed by asking again).
  function start(tokenSource) {
    stop();
    getToken = tokenSource;
    el("dashboard").classList.remove("hidden");
    legend();
    openFirehose("firehose");
    figures();
    trends();
    timers.push(setInterval(drawChart, 500), setInterval(drawMap, 250), setInterval(figures, 3000), setInterval(trends, 10000));
  }

  return { start, stop };
})();
