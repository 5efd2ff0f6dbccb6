// /lead/online: fetch the live figures and draw the table and one plot per figure (shared time axis).
"use strict";
(function () {
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
  const NS = "http://www.w3.org/2000/svg";
  const fmt = (v) => (v === null || v === undefined ? "-" : Number(v).toFixed(4));

  function cell(tr, text) {
    const td = document.createElement("td");
    if (tr.cells.length) td.className = "num";
    td.textContent = text;  // inert text, never HTML
    tr.appendChild(td);
  }

  function el(name, attrs) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  // about five round values between lo and hi (1, 2 or 5 times a power of ten apart)
  function ticks(lo, hi) {
    const raw = (hi - lo) / 4 || 1, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  }
  const clock = (t) => new Date(t * 1000).toISOString().slice(11, 16);  // event time, UTC, minutes

  // one line per arm over event time: a y axis with ticks and the figure's unit, an x axis in UTC minutes
  function plot(svg, series, key, arms, t0, t1, unit) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const vb = svg.viewBox.baseVal, w = vb.width, h = vb.height;
    const left = 58, right = 96, top = 10, bottom = 34;
    const pts = series.filter((s) => s[key] !== null && s[key] !== undefined);
    if (!pts.length) {
      const none = el("text", {x: left, y: h / 2, "font-size": 13, fill: "#67717d"});
      none.textContent = "no events in the window yet";
      svg.appendChild(none);
      return;
    }
    let lo = Math.min(0, ...pts.map((s) => s[key])), hi = Math.max(...pts.map((s) => s[key]));
    if (hi <= lo) hi = lo + 1;
    const ys = ticks(lo, hi);
    lo = Math.min(lo, ys[0]); hi = Math.max(hi, ys[ys.length - 1]);
    const x = (t) => left + (w - left - right) * (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5);
    const y = (v) => h - bottom - (h - top - bottom) * (v - lo) / (hi - lo);
    const axis = {stroke: "#67717d", "stroke-width": 1};
    svg.appendChild(el("line", {x1: left, y1: top, x2: left, y2: h - bottom, ...axis}));
    svg.appendChild(el("line", {x1: left, y1: h - bottom, x2: w - right, y2: h - bottom, ...axis}));
    for (const v of ys) {
      svg.appendChild(el("line", {x1: left - 4, y1: y(v), x2: w - right, y2: y(v), stroke: "#e3e7eb"}));
      const t = el("text", {x: left - 6, y: y(v) + 4, "font-size": 11, "text-anchor": "end", fill: "#1d232a"});
      t.textContent = unit === "%" ? (v * 100).toFixed(0) + " %" : String(v);
      svg.appendChild(t);
    }
    const span = Math.max(60, t1 - t0), step = Math.max(60, Math.ceil(span / 5 / 60) * 60);
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      svg.appendChild(el("line", {x1: x(t), y1: h - bottom, x2: x(t), y2: h - bottom + 4, ...axis}));
      const label = el("text", {x: x(t), y: h - bottom + 16, "font-size": 11, "text-anchor": "middle"});
      label.textContent = clock(t);
      svg.appendChild(label);
    }
    const xname = el("text", {x: (left + w - right) / 2, y: h - 3, "font-size": 11, "text-anchor": "middle",
                              fill: "#67717d"});
    xname.textContent = "event time (UTC, per minute)";
    svg.appendChild(xname);
    arms.forEach((arm, i) => {
      const mine = pts.filter((s) => s.arm === arm);
      const color = COLORS[i % COLORS.length];
      svg.appendChild(el("polyline", {fill: "none", stroke: color, "stroke-width": 2,
        points: mine.map((s) => x(s.t).toFixed(1) + "," + y(s[key]).toFixed(1)).join(" ")}));
      const name = el("text", {x: w - right + 8, y: top + 12 + 14 * i, "font-size": 12, fill: color});
      name.textContent = arm;
      svg.appendChild(name);
    });
  }

  async function refresh() {
    const win = document.getElementById("window").dataset.window;
    const status = document.getElementById("status");
    try {
      const unjudged = document.getElementById("unjudged").dataset.unjudged;
      const res = await fetch("/api/online/arms?window=" + encodeURIComponent(win) + "&unjudged=" +
                              encodeURIComponent(unjudged), {credentials: "same-origin"});
      const data = await res.json();
      if (!res.ok) { status.textContent = data.detail || "error"; return; }
      document.getElementById("metric-name").textContent = data.metric;
      document.getElementById("plot-metric-title").textContent = data.metric + " per minute";
      const body = document.querySelector("#arms tbody");
      while (body.firstChild) body.removeChild(body.firstChild);
      for (const a of data.arms) {
        const tr = document.createElement("tr");
        [a.arm, String(a.n), fmt(a.metric), fmt(a.judged_share), fmt(a.ctr), fmt(a.conversion), fmt(a.watch_ratio)]
          .forEach((t) => cell(tr, t));
        body.appendChild(tr);
      }
      const arms = data.arms.map((a) => a.arm);
      const ts = data.series.map((s) => s.t);
      if (!ts.length) ts.push(Date.now() / 1000);
      const t0 = Math.min(...ts), t1 = Math.max(...ts);
      plot(document.getElementById("plot-metric"), data.series, "metric", arms, t0, t1, "");
      plot(document.getElementById("plot-ctr"), data.series, "ctr", arms, t0, t1, "%");
      plot(document.getElementById("plot-conversion"), data.series, "conversion", arms, t0, t1, "%");
      status.textContent = data.n_events + " events; updated " + new Date().toLocaleTimeString();
    } catch (e) {
      status.textContent = "could not load the live figures";
    }
  }
  refresh();
  setInterval(refresh, 5000);
})();
