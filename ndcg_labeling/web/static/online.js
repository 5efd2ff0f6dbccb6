// /lead/online: fetch the live figures and draw the table and one plot per figure (shared time axis).
"use strict";
(function () {
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
  const NS = "http://www.w3.org/2000/svg";
  const fmt = (v) => (v === null || v === undefined ? "-" : Number(v).toFixed(4));

  function cell(tr, text) {
    const td = document.createElement("td");
    td.textContent = text;  // inert text, never HTML
    tr.appendChild(td);
  }

  function el(name, attrs) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  function plot(svg, series, key, arms, t0, t1) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const w = Number(svg.getAttribute("width")), h = Number(svg.getAttribute("height")), pad = 36;
    const pts = series.filter((s) => s[key] !== null && s[key] !== undefined);
    if (!pts.length) return;
    let lo = Math.min(...pts.map((s) => s[key])), hi = Math.max(...pts.map((s) => s[key]));
    if (hi <= lo) hi = lo + 1e-9;
    const x = (t) => pad + (w - pad - 90) * (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5);
    const y = (v) => h - pad / 2 - (h - pad) * (v - lo) / (hi - lo);
    const label = el("text", {x: 4, y: 12, "font-size": 11});
    label.textContent = fmt(lo) + " .. " + fmt(hi);
    svg.appendChild(label);
    arms.forEach((arm, i) => {
      const mine = pts.filter((s) => s.arm === arm);
      const color = COLORS[i % COLORS.length];
      svg.appendChild(el("polyline", {fill: "none", stroke: color, "stroke-width": 2,
        points: mine.map((s) => x(s.t).toFixed(1) + "," + y(s[key]).toFixed(1)).join(" ")}));
      const name = el("text", {x: w - 84, y: 14 + 13 * i, "font-size": 11, fill: color});
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
      const t0 = Math.min(...ts), t1 = Math.max(...ts);
      plot(document.getElementById("plot-metric"), data.series, "metric", arms, t0, t1);
      plot(document.getElementById("plot-ctr"), data.series, "ctr", arms, t0, t1);
      plot(document.getElementById("plot-conversion"), data.series, "conversion", arms, t0, t1);
      status.textContent = data.n_events + " events; updated " + new Date().toLocaleTimeString();
    } catch (e) {
      status.textContent = "could not load the live figures";
    }
  }
  refresh();
  setInterval(refresh, 5000);
})();
