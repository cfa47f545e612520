// inferscope-bench run timeline (served by `inferscope-bench serve`, or inlined by
// `inferscope-bench report RUN_DIR --format html`). Plain JavaScript, no framework, no
// request to any other origin. Every text that comes from an artifact is inserted with
// textContent, never as HTML.
(function () {
  "use strict";

  var MAX_PAGES = 50;
  var MAX_OPEN_TABLE_ROWS = 60;
  var app = document.getElementById("app");
  var statusEl = document.getElementById("status");
  var state = { token: null, bundle: null, spans: [], selected: null, zoom: null, groupOpen: {}, setWindow: null };

  // ---------- small DOM helpers ----------
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svgEl(tag) {
    return document.createElementNS("http://www.w3.org/2000/svg", tag);
  }
  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }
  function ms(ns) {
    return ns === null || ns === undefined ? "—" : (ns / 1e6).toFixed(3);
  }
  // A figure for people: up to 3 decimals with trailing zeros trimmed (812.4, 500,
  // 16.667); scientific notation below 0.0005 or from 1e15 on (the console's rule).
  function num(v) {
    if (v === null || v === undefined) return "—";
    if (!isFinite(v)) return String(v);
    var a = Math.abs(v);
    if ((a !== 0 && a < 0.0005) || a >= 1e15) return v.toExponential(3);
    var t = v.toFixed(3).replace(/0+$/, "").replace(/\.$/, "");
    return t === "-0" ? "0" : t;
  }
  // The trajectory of a timeline case id: its part before the first "/" (a context
  // sweep's `suite::job#0/s128r0` belongs to `suite::job#0`).
  function trajectoryOf(caseId) {
    return caseId ? String(caseId).split("/")[0] : null;
  }
  // Observed completion tokens, else the client's estimate marked "~" (no server usage;
  // docs/measurement.md), else null.
  function completionOf(e) {
    if (e.completion_tokens != null) return e.completion_tokens;
    if (e.completion_tokens_estimate != null) return "~" + e.completion_tokens_estimate;
    return null;
  }

  function dash(v) {
    return v === null || v === undefined ? "—" : String(v);
  }
  function setStatus(text, isError) {
    statusEl.textContent = text;
    statusEl.className = isError ? "status error" : "status";
  }

  // ---------- data ----------
  function inlineBundle() {
    var s = document.getElementById("inferscope-data");
    if (!s) return null;
    return JSON.parse(s.textContent);
  }

  function fragment() {
    var h = window.location.hash.replace(/^#/, "");
    var out = { token: null, run: null };
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) return;
      var k = kv.slice(0, i);
      var v;
      try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (k === "token") out.token = v;
      if (k === "run") out.run = v;
    });
    return out;
  }

  function setFragmentRun(run) {
    var h = run ? "#run=" + encodeURIComponent(run) : "";
    window.history.replaceState(null, "", window.location.pathname + h);
  }

  function ApiError(status, body) {
    this.status = status;
    this.body = body;
    var e = body && body.error;
    this.message = e ? e.code + ": " + e.message : "HTTP " + status;
  }

  function api(path) {
    return fetch(path, {
      headers: { Authorization: "Bearer " + state.token },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer"
    }).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (body) {
        if (!r.ok) throw new ApiError(r.status, body);
        return body;
      });
    });
  }

  function loadRuns() {
    var runs = [];
    function page(after, n) {
      var q = "/v1/runs?limit=100" + (after ? "&after=" + encodeURIComponent(after) : "");
      return api(q).then(function (p) {
        runs = runs.concat(p.runs);
        if (p.next_after && n < MAX_PAGES) return page(p.next_after, n + 1);
        return runs;
      });
    }
    return page(null, 1);
  }

  function loadEvents(runId, truncated) {
    var events = [];
    function page(after, n) {
      return api("/v1/benchmark-timeline?run_id=" + encodeURIComponent(runId) +
        "&after_seq=" + after + "&limit=1000").then(function (p) {
        if (p.state !== "ok") return null;
        events = events.concat(p.events);
        if (p.next_after_seq !== null && p.next_after_seq !== undefined) {
          if (n >= MAX_PAGES) { truncated.events = true; return events; }
          return page(p.next_after_seq, n + 1);
        }
        return events;
      });
    }
    return page(0, 1);
  }

  function loadSamples(runId, source, truncated) {
    var all = [];
    function page(after, n) {
      return api("/v1/samples?run_id=" + encodeURIComponent(runId) + "&source=" + source +
        "&after=" + after + "&limit=5000").then(function (p) {
        if (p.state !== "ok") return null;
        all = all.concat(p.samples);
        if (p.next_after !== null && p.next_after !== undefined) {
          if (n >= MAX_PAGES) { truncated[source] = true; return all; }
          return page(p.next_after, n + 1);
        }
        return all;
      });
    }
    return page(0, 1);
  }

  // The run detail comes in pages of jobs (at most 1 MiB each): the first page carries
  // everything else; later pages add their jobs.
  function loadDetail(runId, truncated) {
    var base = "/v1/runs/" + encodeURIComponent(runId);
    return api(base).then(function (first) {
      function more(after, n) {
        if (after === null || after === undefined) return first;
        if (n >= MAX_PAGES) { truncated.jobs = true; return first; }
        return api(base + "?jobs_after=" + after).then(function (p) {
          first.report.jobs = first.report.jobs.concat(p.report.jobs || []);
          first.jobs_summarised = (first.jobs_summarised || []).concat(p.jobs_summarised || []);
          return more(p.jobs_next_after, n + 1);
        });
      }
      return more(first.jobs_next_after, 1);
    });
  }

  function loadBundle(runId, runs) {
    var truncated = { events: false, power: false, proc: false, metrics: false, jobs: false };
    return loadDetail(runId, truncated).then(function (detail) {
      var b = { mode: "api", runs: runs, run_id: runId, detail: detail, events: null,
        samples: { power: null, proc: null, metrics: null }, truncated: truncated };
      var jobs = [];
      if (detail.timeline.state === "ok") {
        jobs.push(loadEvents(runId, truncated).then(function (ev) { b.events = ev; }));
      }
      if (detail.telemetry.aligned !== false) {
        ["power", "proc", "metrics"].forEach(function (src) {
          if (detail.telemetry.lanes.some(function (l) { return l.source === src; })) {
            jobs.push(loadSamples(runId, src, truncated).then(function (s) { b.samples[src] = s; }));
          }
        });
      }
      // The charts: SVG element trees drawn by the server from report.json.
      jobs.push(api("/v1/charts?run_id=" + encodeURIComponent(runId)).then(function (c) { b.charts = c; }, function (err) {
        b.charts = { charts: [], notes: [{ kind: "error", text: "Charts unavailable: " + (err && err.message ? err.message : String(err)) }] };
      }));
      return Promise.all(jobs).then(function () { return b; });
    });
  }

  // ---------- spans ----------
  function familyOf(kind) {
    return kind.replace(/_(start|end)$/, "");
  }

  function buildSpans(events) {
    var byId = new Map();
    var list = [];
    var orphans = [];
    events.forEach(function (e) {
      if (/_start$/.test(e.kind)) {
        var s = { id: e.span_id, family: familyOf(e.kind), name: e.name, start: e.elapsed_ns,
          end: null, status: "unknown_end", caseId: e.case_id, traj: trajectoryOf(e.case_id), requestId: e.request_id,
          parent: e.parent_span_id, seq: e.seq, prompt: null, completion: null, failure: null,
          attempt: e.attempt, startKnown: true };
        byId.set(e.span_id, s);
        list.push(s);
      } else {
        var t = byId.get(e.span_id);
        if (t) {
          t.end = e.elapsed_ns;
          t.status = e.status;
          t.prompt = e.prompt_tokens;
          t.completion = completionOf(e);
          t.failure = e.failure_code;
          if (!t.requestId && e.request_id) t.requestId = e.request_id;
        } else {
          orphans.push({ id: e.span_id, family: familyOf(e.kind), name: e.name, start: null,
            end: e.elapsed_ns, status: e.status, caseId: null, traj: null, requestId: e.request_id,
            parent: e.parent_span_id, seq: e.seq, prompt: e.prompt_tokens,
            completion: completionOf(e), failure: e.failure_code, startKnown: false });
        }
      }
    });
    // An orphan end inherits the lane of its parent's trajectory when known.
    orphans.forEach(function (o) { list.push(o); });
    return list;
  }

  // Energy (and TTFT) per span from the report's steps, joined by identity only: the same
  // trajectory (the case id's trajectory) and the same order and kind of steps. Any
  // mismatch leaves them unjoined.
  function joinEnergy(spans, detail) {
    var steps = {};
    var reqTtft = {};
    (detail.report.jobs || []).forEach(function (j) {
      j.trajectories.forEach(function (t) { steps[t.id] = t.steps; });
      var m = j.request_ttft_ms || {};
      Object.keys(m).forEach(function (id) { reqTtft[id] = m[id]; });
    });
    var lanes = {};
    spans.forEach(function (s) {
      if ((s.family === "request" || s.family === "fixture") && s.traj && s.startKnown) {
        (lanes[s.traj] = lanes[s.traj] || []).push(s);
      }
    });
    Object.keys(lanes).forEach(function (traj) {
      var ss = lanes[traj].slice().sort(function (a, b) { return a.seq - b.seq; });
      var st = steps[traj];
      var ok = st && st.length === ss.length && ss.every(function (s, i) {
        var p = st[i];
        return s.family === "request" ? p.kind === "llm_call" : (p.kind === "tool" && p.name === s.name);
      });
      ss.forEach(function (s, i) {
        s.energyJoin = ok ? "joined" : "no_join";
        if (ok) {
          s.energy = st[i].energy.value; s.energyBasis = st[i].energy.basis;
          s.energyReason = st[i].energy.reason; s.stepId = st[i].step_id;
          s.stepNumber = i + 1; s.ttftMs = st[i].ttft_ms;
        } else if (s.family === "request" && s.requestId && reqTtft[s.requestId] !== undefined) {
          // A load unit report.json does not keep: its record's TTFT (requests.jsonl).
          s.ttftMs = reqTtft[s.requestId];
        }
      });
    });
  }

  function energyText(s) {
    if (s.family === "phase") return "— (not attributed to phases)";
    if (s.energyJoin === "joined") {
      if (s.energy === null || s.energy === undefined) {
        return "— unavailable (" + dash(s.energyBasis) + (s.energyReason ? ": " + s.energyReason : "") + ")";
      }
      return s.energy + " mJ (" + dash(s.energyBasis) + ")";
    }
    if (s.energyJoin === "no_join") return "— (no identity join with report steps)";
    return "— (no step)";
  }

  function statusText(s) {
    if (!s.startKnown) return (s.status || "?") + " · start unknown";
    if (s.end === null) return "end unknown";
    return s.status + (s.failure && s.failure !== s.status ? " (" + s.failure + ")" : "");
  }

  function spanTitle(s) {
    var who = s.family === "phase" ? "phase" : (s.caseId || "no case id");
    return s.name + " · " + who + (s.stepNumber ? " · step " + s.stepNumber : "") + " · start " + ms(s.start) + " ms · " +
      (s.end !== null && s.start !== null ? "duration " + ms(s.end - s.start) + " ms" : "duration unknown") +
      (s.ttftMs !== null && s.ttftMs !== undefined ? " · TTFT " + num(s.ttftMs) + " ms" : "") +
      " · " + statusText(s);
  }

  // ---------- rendering ----------
  function render(b) {
    state.bundle = b;
    var d = b.detail;
    var spans = b.events ? buildSpans(b.events) : [];
    joinEnergy(spans, d);
    state.spans = spans;
    state.selected = null;
    if (state.runId !== b.run_id) { state.zoom = null; state.groupOpen = {}; }
    state.runId = b.run_id;
    renderRunSelect(b);
    renderSummary(d);
    renderGaps(d, b);
    renderLegend();
    renderTimeline(b, spans);
    renderTable(b, spans);
    renderCharts(b);
    renderJobs(d);
    renderDetail(null);
    setStatus(b.mode === "static" ? "Static report of run " + b.run_id : "Run " + b.run_id, false);
    app.setAttribute("data-run", b.run_id);
    app.setAttribute("data-state", "ready");
  }

  function renderRunSelect(b) {
    var sel = document.getElementById("run-select");
    clear(sel);
    (b.runs || []).forEach(function (r) {
      var label = r.run_id + " · " + (r.capture_quality || (r.capture_enabled === false ? "capture off" : "no capture record")) +
        (r.cancelled ? " · cancelled" : "") + (r.started_utc ? " · " + r.started_utc : "");
      var o = el("option", null, label);
      o.value = r.run_id;
      if (r.run_id === b.run_id) o.selected = true;
      sel.appendChild(o);
    });
    sel.disabled = b.mode === "static";
  }

  function badge(id, attrs, glyph, text, big) {
    var e = el("div", "badge" + (big ? " big" : ""));
    e.id = id;
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    e.appendChild(el("span", "glyph", glyph));
    e.setAttribute("aria-hidden", "false");
    e.appendChild(el("span", "text", text));
    return e;
  }

  function qualityLabel(t) {
    if (t.state === "ok" && t.quality === "complete") return ["complete", "✓", "Capture: COMPLETE"];
    if (t.state === "ok") return ["partial", "◐", "Capture: PARTIAL (" + t.quality_reasons.join(", ") + ")"];
    if (t.state === "unavailable") return ["unavailable", "∅", "Capture: UNAVAILABLE (" +
      (t.reason === "no_manifest" ? "no manifest: killed run or failed persistence" : t.reason === "run_incomplete" ? "incomplete run: no report.json" : "no timeline: capture off") + ")"];
    return ["integrity_error", "⚠", "Capture: INTEGRITY ERROR"];
  }

  function renderSummary(d) {
    var s = document.getElementById("summary");
    clear(s);
    var q = qualityLabel(d.timeline);
    s.appendChild(badge("quality", { "data-quality": q[0] }, q[1], q[2], true));
    var dropped = d.timeline.dropped_count;
    s.appendChild(badge("dropped", { "data-dropped": dropped === null || dropped === undefined ? "unknown" : String(dropped) },
      dropped ? "▼" : "·", "Dropped events: " + (dropped === null || dropped === undefined ? "unknown (no timeline)" : dropped), true));
    var r = d.report;
    var runText, runAttr;
    if (r.state !== "ok") { runText = "Run: report " + r.state; runAttr = "unknown"; }
    else {
      runAttr = r.cancelled ? "cancelled" : "finished";
      var sum = r.summary;
      var notRun = sum.not_run || 0;
      var setup = sum.setup_errors || 0;
      runText = "Run: " + (r.cancelled ? "CANCELLED" : "finished") + " · " + sum.passed + " of " + (sum.jobs + notRun + setup) + " jobs passed" +
        (notRun ? ", " + notRun + " not run" : "") +
        (sum.cancelled ? ", " + sum.cancelled + " cancelled" : "") +
        (setup ? ", " + setup + " setup error" + (setup === 1 ? "" : "s") : "");
    }
    s.appendChild(badge("run-state", { "data-run": runAttr }, r.cancelled ? "⊘" : "▶", runText));
    var t = d.telemetry;
    var tAttr, tText, tGlyph;
    if (t.aligned === false) { tAttr = "misaligned"; tGlyph = "≠"; tText = "Resource telemetry: CLOCK-DOMAIN MISMATCH (" + t.clock_domain + "), not placed on this axis"; }
    else if (t.state === "unavailable") { tAttr = "unavailable"; tGlyph = "∅"; tText = "Resource telemetry: UNAVAILABLE"; }
    else if (t.state === "fault") { tAttr = "fault"; tGlyph = "⚠"; tText = "Resource telemetry: UNREADABLE"; }
    else { tAttr = "aligned"; tGlyph = "≡"; tText = "Resource telemetry: " + t.lanes.length + " lane(s), same clock domain (" + t.clock_domain + ")"; }
    s.appendChild(badge("telemetry-state", { "data-telemetry": tAttr }, tGlyph, tText));
    if (r.endpoint) {
      s.appendChild(badge("endpoint", { "data-simulated": String(r.endpoint.simulated) }, r.endpoint.simulated ? "◇" : "◆",
        (r.endpoint.simulated ? "Built-in simulator (not a real engine)" : "Endpoint") + " · model " + r.endpoint.model));
    }
  }

  function renderGaps(d, b) {
    var ul = document.getElementById("gap-list");
    clear(ul);
    var gaps = d.gaps.slice();
    Object.keys(b.truncated || {}).forEach(function (k) {
      if (b.truncated[k]) gaps.push({ kind: "truncated", label: "View truncated: not every " + k + " record is drawn (page limit)" });
    });
    (d.jobs_summarised || []).forEach(function (j) {
      gaps.push({ kind: "truncated", label: "Job " + j.id + " summarised (too large for one page): " +
        j.trajectories_kept + " of " + j.trajectories_total + " trajectories, " + j.steps_omitted + " steps left out" });
    });
    if (!gaps.length) {
      var li = el("li");
      li.setAttribute("data-gap", "none");
      var sw = el("span", "swatch"); sw.setAttribute("data-gap", "none"); sw.setAttribute("aria-hidden", "true");
      li.appendChild(sw);
      li.appendChild(el("span", null, "No gaps recorded: capture complete, samples continuous."));
      ul.appendChild(li);
      return;
    }
    gaps.forEach(function (g) {
      var li = el("li", "gap-item");
      li.setAttribute("data-gap", g.kind);
      var sw = el("span", "swatch"); sw.setAttribute("data-gap", g.kind); sw.setAttribute("aria-hidden", "true");
      li.appendChild(sw);
      li.appendChild(el("span", null, g.label));
      ul.appendChild(li);
    });
  }

  function renderLegend() {
    var lg = document.getElementById("legend");
    clear(lg);
    [["family-phase", "phase span"], ["family-request", "model request"], ["ttft", "TTFT (first token) inside a request"],
      ["family-fixture", "fixture tool (its boundaries marked)"],
      ["status-failed", "failed (cross-hatched, ✕)"], ["status-cancelled", "cancelled (dashed, ⊘)"],
      ["status-unknown_end", "end unknown (dotted edge, …?)"]].forEach(function (x) {
      var s = el("span");
      var sw = el("span", "swatch " + x[0]); sw.setAttribute("aria-hidden", "true");
      s.appendChild(sw); s.appendChild(el("span", null, x[1]));
      lg.appendChild(s);
    });
    [["missing_samples", "no samples"], ["dropped_events", "lost events"], ["clock_domain_mismatch", "clock-domain mismatch"]].forEach(function (x) {
      var s = el("span");
      var sw = el("span", "swatch"); sw.setAttribute("data-gap", x[0]); sw.setAttribute("aria-hidden", "true");
      s.appendChild(sw); s.appendChild(el("span", null, x[1]));
      lg.appendChild(s);
    });
  }

  function timeRange(b, spans) {
    var d = b.detail;
    var lo = Infinity, hi = -Infinity;
    function take(v) { if (v !== null && v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }
    spans.forEach(function (s) { take(s.start); take(s.end); });
    take(d.timeline.start_elapsed_ns); take(d.timeline.end_elapsed_ns);
    (d.report.jobs || []).forEach(function (j) { take(j.start_ns); take(j.end_ns); });
    if (d.telemetry.aligned !== false) { take(d.telemetry.started_elapsed_ns); take(d.telemetry.stopped_elapsed_ns); }
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    return { lo: lo, hi: hi };
  }

  // Places `node` over [a, z] of the visible window; hides it when it lies outside.
  function place(node, range, a, z) {
    var w = range.hi - range.lo;
    var left = Math.max(0, (a - range.lo) / w * 100);
    var right = Math.min(100, (z - range.lo) / w * 100);
    node.style.left = left + "%";
    node.style.width = Math.max(0, right - left) + "%";
    node.hidden = z < range.lo || a > range.hi;
  }

  function laneRow(kind, labelText, meta, attrs) {
    var lane = el("div", "lane");
    lane.setAttribute("data-lane-kind", kind);
    Object.keys(attrs || {}).forEach(function (k) { lane.setAttribute(k, attrs[k]); });
    var label = el("div", "lane-label", labelText);
    if (meta) label.appendChild(el("span", "meta", meta));
    var track = el("div", "track");
    track.setAttribute("role", "group");
    track.setAttribute("aria-label", labelText);
    lane.appendChild(label);
    lane.appendChild(track);
    return { lane: lane, track: track };
  }

  function gapMarker(kind, text, range, a, z) {
    var m = el("div", "gap-marker");
    m.setAttribute("data-gap", kind);
    m.setAttribute("title", text);
    m.appendChild(el("span", "gap-label", text));
    if (range) place(m, range, a, z); else m.className += " wide";
    return m;
  }

  // The zoom toolbar: narrower, wider, earlier, later, the whole run; and a readout of the
  // window. Dragging across the axis zooms to the dragged interval.
  function renderZoom(b, spans, full, range) {
    var bar = document.getElementById("zoom");
    clear(bar);
    function button(label, act, key) {
      var btn = el("button", "zoom-button", label);
      btn.type = "button";
      btn.setAttribute("data-zoom", key);
      btn.addEventListener("click", function () { act(); renderTimeline(b, spans); });
      bar.appendChild(btn);
    }
    function setWindow(lo, hi) {
      var w = Math.max(hi - lo, (full.hi - full.lo) / 1000);
      lo = Math.max(full.lo, Math.min(lo, full.hi - w));
      state.zoom = { lo: lo, hi: Math.min(full.hi, lo + w) };
      if (state.zoom.lo <= full.lo && state.zoom.hi >= full.hi) state.zoom = null;
    }
    var mid = (range.lo + range.hi) / 2, half = (range.hi - range.lo) / 2;
    button("Zoom in", function () { setWindow(mid - half / 2, mid + half / 2); }, "in");
    button("Zoom out", function () { setWindow(mid - half * 2, mid + half * 2); }, "out");
    button("← Earlier", function () { setWindow(range.lo - half, range.hi - half); }, "earlier");
    button("Later →", function () { setWindow(range.lo + half, range.hi + half); }, "later");
    button("Whole run", function () { state.zoom = null; }, "reset");
    var readout = el("span", "zoom-readout", "Showing " + ms(range.lo) + "–" + ms(range.hi) + " ms of " +
      ms(full.lo) + "–" + ms(full.hi) + " ms" + (state.zoom ? " (zoomed: drag across the axis to zoom further)" : " (drag across the axis to zoom)"));
    readout.id = "zoom-readout";
    readout.setAttribute("aria-live", "polite");
    bar.appendChild(readout);
    state.setWindow = setWindow;
  }

  function renderAxis(root, range, b, spans) {
    var axis = el("div", "axis");
    axis.appendChild(el("div", "label-spacer", "ms"));
    var ticks = el("div", "ticks");
    for (var i = 0; i <= 4; i++) {
      var t = el("span", "tick" + (i === 0 ? " first" : i === 4 ? " last" : ""), ms(range.lo + (range.hi - range.lo) * i / 4).replace(/\.\d+$/, "") + " ms");
      t.style.left = (i * 25) + "%";
      ticks.appendChild(t);
    }
    var sel = el("div", "axis-selection");
    sel.hidden = true;
    ticks.appendChild(sel);
    var from = null;
    function at(ev) {
      var r = ticks.getBoundingClientRect();
      return Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width));
    }
    ticks.addEventListener("pointerdown", function (ev) { from = at(ev); sel.hidden = false; place(sel, { lo: 0, hi: 1 }, from, from); });
    ticks.addEventListener("pointermove", function (ev) {
      if (from === null) return;
      var x = at(ev);
      place(sel, { lo: 0, hi: 1 }, Math.min(from, x), Math.max(from, x));
    });
    ticks.addEventListener("pointerup", function (ev) {
      if (from === null) return;
      var x = at(ev), a = Math.min(from, x), z = Math.max(from, x);
      from = null;
      sel.hidden = true;
      if (z - a < 0.01) return;
      var w = range.hi - range.lo;
      state.setWindow(range.lo + a * w, range.lo + z * w);
      renderTimeline(b, spans);
    });
    axis.appendChild(ticks);
    root.appendChild(axis);
  }

  function spanButton(s, range, captureEnd) {
    var btn = el("button", "span");
    btn.type = "button";
    btn.setAttribute("data-family", s.family);
    btn.setAttribute("data-span-id", String(s.id));
    btn.setAttribute("data-status", s.end === null ? "unknown_end" : (s.status || "unknown"));
    btn.setAttribute("aria-pressed", "false");
    btn.setAttribute("aria-label", spanTitle(s));
    btn.title = spanTitle(s);
    var prefix = s.status === "failed" ? "✕ " : s.status === "cancelled" ? "⊘ " : "";
    var suffix = s.end === null ? " …?" : "";
    btn.appendChild(el("span", "span-text", prefix + s.name + suffix));
    var end = s.end !== null ? s.end : captureEnd;
    place(btn, range, s.start, Math.max(end, s.start));
    // TTFT inside a request: a mark at the first token (from the report's step).
    if (s.family === "request" && s.ttftMs !== null && s.ttftMs !== undefined && end > s.start) {
      var f = Math.max(0, Math.min(1, s.ttftMs * 1e6 / (end - s.start)));
      var m = el("span", "ttft-mark");
      m.setAttribute("data-ttft-ms", num(s.ttftMs));
      m.setAttribute("aria-hidden", "true");
      m.style.left = (f * 100) + "%";
      btn.appendChild(m);
    }
    btn.addEventListener("click", function () { select(s); });
    s.button = btn;
    return btn;
  }

  // A merged run: one lane group per shard, its trajectories' steps from the
  // report, placed on the merged axis (each shard's times shifted by its unix anchor); the
  // group title states the clock domain, the shift and the anchor uncertainty.
  function renderShardGroups(root, d, groups, range) {
    var trajById = {};
    (d.report.jobs || []).forEach(function (j) { j.trajectories.forEach(function (t) { trajById[t.id] = t; }); });
    groups.forEach(function (g) {
      var title = el("div", "group-title", "Shard " + g.k + "/" + g.n + " · clock domain " + g.clock_domain +
        " · shifted +" + (g.offset_ns / 1e6).toFixed(3) + " ms by its unix anchor (± " +
        (g.uncertainty_ns / 1e3).toFixed(1) + " µs, " + g.alignment + ")");
      title.setAttribute("data-shard-group", String(g.k));
      root.appendChild(title);
      if (!g.trajectories.length) {
        var none = laneRow("trajectory", "No trajectory", "shard " + g.k, { "data-shard": String(g.k) });
        root.appendChild(none.lane);
      }
      g.trajectories.forEach(function (id) {
        var t = trajById[id];
        if (!t) return;
        var row = laneRow("trajectory", id, t.steps.length + " step(s) · shard " + g.k, { "data-trajectory": id, "data-shard": String(g.k) });
        t.steps.forEach(function (st, i) {
          var s = { id: st.step_id, family: st.kind === "llm_call" ? "request" : "fixture", name: st.name,
            start: st.start_ns, end: st.end_ns, status: st.status || "unknown", caseId: id, traj: id, requestId: null,
            parent: null, seq: st.step_id, prompt: st.prompt_tokens, completion: st.completion_tokens,
            failure: st.failure_code, startKnown: true, energyJoin: "joined", energy: st.energy.value,
            energyBasis: st.energy.basis, energyReason: st.energy.reason, stepId: st.step_id,
            stepNumber: i + 1, ttftMs: st.ttft_ms };
          row.track.appendChild(spanButton(s, range, range.hi));
        });
        root.appendChild(row.lane);
      });
    });
  }

  // Lane groups collapse when they hold more than this many trajectories (a load run's
  // points): the group then shows one overview lane with every span of its trajectories.
  var OPEN_GROUP_MAX = 8;

  // One overview lane: every span of `list` as a thin mark (requests, tool boundaries and
  // TTFT marks), for a collapsed group.
  function overviewLane(title, list, range, captureEnd, attrs) {
    var row = laneRow("overview", title, null, attrs);
    var requests = 0, tools = 0;
    list.forEach(function (s) {
      if (!s.startKnown) return;
      var m = el("div", "mark");
      m.setAttribute("data-family", s.family);
      m.setAttribute("aria-hidden", "true");
      place(m, range, s.start, Math.max(s.end !== null ? s.end : captureEnd, s.start));
      if (s.family === "request") {
        requests++;
        if (s.ttftMs !== null && s.ttftMs !== undefined && s.end !== null && s.end > s.start) {
          var t = el("span", "ttft-mark");
          t.style.left = Math.max(0, Math.min(100, s.ttftMs * 1e6 / (s.end - s.start) * 100)) + "%";
          m.appendChild(t);
        }
      } else if (s.family === "fixture") tools++;
      row.track.appendChild(m);
    });
    row.track.setAttribute("aria-label", title + ": " + requests + " model request(s) and " + tools +
      " tool call(s) overlaid; expand the group to select them");
    return row;
  }

  // A collapsible group of lanes: a toggle (with the group's title), its overview lane
  // (shown while collapsed) and its body.
  function laneGroup(root, kind, title, count, open, overview) {
    var g = el("section", "lane-group");
    g.setAttribute("data-group-kind", kind);
    var toggle = el("button", "group-toggle");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    var glyph = el("span", "glyph", open ? "▼" : "▶");
    glyph.setAttribute("aria-hidden", "true");
    toggle.appendChild(glyph);
    toggle.appendChild(el("span", null, title + " · " + count));
    var body = el("div", "group-body");
    body.hidden = !open;
    g.appendChild(toggle);
    if (overview) {
      overview.lane.hidden = open;
      g.appendChild(overview.lane);
    }
    g.appendChild(body);
    toggle.addEventListener("click", function () {
      var now = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", now ? "true" : "false");
      glyph.textContent = now ? "▼" : "▶";
      body.hidden = !now;
      if (overview) overview.lane.hidden = now;
      state.groupOpen[title] = now;
    });
    root.appendChild(g);
    return body;
  }

  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

  function renderTimeline(b, spans) {
    var root = document.getElementById("timeline");
    clear(root);
    var d = b.detail;
    var full = timeRange(b, spans);
    var range = state.zoom || full;
    var captureEnd = d.timeline.end_elapsed_ns !== null && d.timeline.end_elapsed_ns !== undefined ? d.timeline.end_elapsed_ns : full.hi;
    renderZoom(b, spans, full, range);
    renderAxis(root, range, b, spans);

    root.appendChild(el("div", "group-title", "Phases"));
    var phases = laneRow("phase", "Run phases", "preparation → finalization", { "data-lane": "phases" });
    root.appendChild(phases.lane);
    var lanesForKeys = [];
    if (d.timeline.state !== "ok") {
      var txt = d.timeline.state === "unavailable"
        ? "Timeline unavailable: " + (d.timeline.reason === "no_manifest" ? "no manifest (killed run or failed persistence)" : d.timeline.reason === "run_incomplete" ? "incomplete run (no report.json)" : "capture was off for this run")
        : "Timeline integrity error: not shown";
      phases.track.appendChild(gapMarker(d.timeline.state === "unavailable" ? "capture_unavailable" : "integrity_error", txt, null));
    } else {
      var ph = spans.filter(function (s) { return s.family === "phase"; });
      ph.forEach(function (s) { if (s.startKnown) phases.track.appendChild(spanButton(s, range, captureEnd)); });
      lanesForKeys.push(ph.filter(function (s) { return s.startKnown; }));
    }

    // Resources next to the phases, above the (possibly many) trajectory lanes.
    root.appendChild(el("div", "group-title", "Resources, per host and device (never summed)"));
    renderResources(root, b, range);

    var shardGroups = d.report.shards || [];
    if (shardGroups.length) {
      renderShardGroups(root, d, shardGroups, range);
      wireKeys(lanesForKeys);
      return;
    }
    root.appendChild(el("div", "group-title", "Trajectories, by job and sweep point: model requests (TTFT marked) and fixture tools"));
    if (d.timeline.state !== "ok") {
      var empty = laneRow("trajectory", "Trajectories", null, { "data-lane": "trajectories" });
      empty.track.appendChild(gapMarker(d.timeline.state === "unavailable" ? "capture_unavailable" : "integrity_error",
        d.timeline.state === "unavailable" ? "No spans: timeline unavailable (the table lists report steps instead)" : "No spans: timeline failed verification", null));
      root.appendChild(empty.lane);
      wireKeys(lanesForKeys);
      return;
    }
    var byTraj = new Map();
    spans.forEach(function (s) {
      if (s.family === "phase") return;
      var key = s.traj || "(no case id)";
      if (!byTraj.has(key)) byTraj.set(key, []);
      byTraj.get(key).push(s);
    });
    if (!byTraj.size) {
      var none = laneRow("trajectory", "No request or tool spans", null, { "data-lane": "none" });
      none.track.appendChild(gapMarker("capture_partial", "No request or fixture span in the capture", null));
      root.appendChild(none.lane);
    }
    function trajectoryLane(parent, key) {
      var list = byTraj.get(key);
      if (!list) return;
      byTraj.delete(key);
      var row = laneRow("trajectory", key, plural(list.length, "span", "spans"), { "data-trajectory": key });
      var keyed = [];
      list.forEach(function (s) {
        if (s.startKnown) {
          row.track.appendChild(spanButton(s, range, captureEnd));
          keyed.push(s);
          if (s.end === null) {
            row.track.appendChild(gapMarker("unknown_end", "end unknown", range, s.start, captureEnd));
          }
        } else {
          row.track.appendChild(gapMarker("missing_start", "start unknown", range, Math.max(range.lo, s.end - (range.hi - range.lo) * 0.01), s.end));
        }
      });
      lanesForKeys.push(keyed);
      parent.appendChild(row.lane);
    }
    function spansOf(ids) {
      var out = [];
      ids.forEach(function (id) { (byTraj.get(id) || []).forEach(function (s) { out.push(s); }); });
      return out;
    }
    function isOpen(title, n) {
      return state.groupOpen[title] !== undefined ? state.groupOpen[title] : n <= OPEN_GROUP_MAX;
    }
    // A load job's report keeps one trajectory per point; every captured lane whose id
    // starts with a point's unit prefix belongs to that point (in unit order).
    function unitsOf(p) {
      var pre = p.unit_prefix;
      var out = p.trajectories.filter(function (id) { return byTraj.has(id); });
      if (pre) {
        var seen = new Set(out);
        byTraj.forEach(function (_, id) {
          if (!seen.has(id) && id.lastIndexOf(pre, 0) === 0 && /^\d+$/.test(id.slice(pre.length))) { out.push(id); }
        });
        out.sort(function (a, b) { return Number(a.slice(pre.length)) - Number(b.slice(pre.length)); });
      }
      return out;
    }
    (d.report.jobs || []).forEach(function (j) {
      var pointUnits = (j.points || []).map(unitsOf);
      var ids = j.trajectories.map(function (t) { return t.id; }).filter(function (id) { return byTraj.has(id); });
      var inJob = new Set(ids);
      pointUnits.forEach(function (u) { u.forEach(function (id) { if (!inJob.has(id)) { inJob.add(id); ids.push(id); } }); });
      if (!ids.length) return;
      var points = (j.points || []).filter(function (p, i) { return pointUnits[i].length > 0; });
      var title = "Job " + j.id;
      var count = plural(ids.length, "trajectory", "trajectories") + (points.length ? " in " + plural(points.length, "sweep point", "sweep points") : "");
      var open = points.length ? true : isOpen(title, ids.length);
      var overview = points.length ? null : overviewLane(title + " (all " + ids.length + " overlaid)", spansOf(ids), range, captureEnd, { "data-group": j.id });
      var body = laneGroup(root, "job", title, count, points.length ? isOpen(title, points.length) : open, overview);
      body.parentNode.setAttribute("data-job", j.id);
      if (points.length) {
        points.forEach(function (p) {
          var pids = unitsOf(p);
          var ptitle = j.id + " · " + p.label;
          var pover = overviewLane(ptitle + " (all " + pids.length + " overlaid)", spansOf(pids), range, captureEnd, { "data-group": ptitle });
          var pbody = laneGroup(body, "point", ptitle, plural(pids.length, "trajectory", "trajectories"), isOpen(ptitle, pids.length), pover);
          pbody.parentNode.setAttribute("data-point", p.label);
          pids.forEach(function (id) { trajectoryLane(pbody, id); });
        });
      }
      ids.forEach(function (id) { trajectoryLane(body, id); });
    });
    // Spans of no trajectory of the report (or of a report that could not be read).
    if (byTraj.size) {
      var rest = Array.from(byTraj.keys());
      var obody = laneGroup(root, "other", "Spans of no job in the report", plural(rest.length, "lane", "lanes"),
        isOpen("Spans of no job in the report", rest.length),
        overviewLane("Other spans (overlaid)", spansOf(rest), range, captureEnd, { "data-group": "other" }));
      rest.forEach(function (id) { trajectoryLane(obody, id); });
    }
    d.gaps.forEach(function (g) {
      if (g.kind === "seq_gap" && g.start_ns !== null && g.end_ns !== null) {
        var row = laneRow("gap", "Lost events", g.label, { "data-lane": "lost-events" });
        row.track.appendChild(gapMarker("seq_gap", g.label, range, g.start_ns, g.end_ns));
        root.appendChild(row.lane);
      }
    });
    if (d.timeline.dropped_count > 0) {
      var dr = laneRow("gap", "Dropped events", d.timeline.dropped_count + " not recorded", { "data-lane": "dropped" });
      var lastKept = spans.reduce(function (m, s) { return Math.max(m, s.end !== null ? s.end : s.start || 0); }, full.lo);
      dr.track.appendChild(gapMarker("dropped_events", d.timeline.dropped_count + " events dropped after the capture filled; what happened here is not recorded", range, lastKept, captureEnd));
      root.appendChild(dr.lane);
    }
    wireKeys(lanesForKeys);
  }

  // The value a lane draws from one sample (undefined: not this lane's sample; null: no
  // value here, the curve breaks). The CPU lane is derived from consecutive samples, as the
  // Perfetto counter is: Δ(utime + stime) / CLK_TCK / Δt, % of one core.
  function laneValues(lane, samples) {
    var out = [];
    if (lane.series === "rate") {
      var tck = lane.clk_tck;
      for (var i = 1; i < samples.length; i++) {
        var a = samples[i - 1], z = samples[i];
        var dt = z.elapsed_ns - a.elapsed_ns;
        var ok = tck > 0 && dt > 0 && a.process_count === z.process_count &&
          [a.utime_jiffies, a.stime_jiffies, z.utime_jiffies, z.stime_jiffies].every(function (v) { return v !== null && v !== undefined; });
        var dj = ok ? (z.utime_jiffies + z.stime_jiffies) - (a.utime_jiffies + a.stime_jiffies) : -1;
        out.push([z.elapsed_ns, dj >= 0 ? dj / tck / (dt / 1e9) * 100 : null, a.elapsed_ns]);
      }
      return out;
    }
    samples.forEach(function (s) {
      var v;
      if (lane.source === "power") v = s.device === lane.device ? s.power_mw : undefined;
      else if (lane.source === "proc") v = s.rss_bytes;
      else if (lane.series === "counter") v = s.resets && s.resets[lane.quantity] ? null : (s.counters ? s.counters[lane.quantity] : null);
      else v = s.gauges ? s.gauges[lane.quantity] : null;
      if (v !== undefined) out.push([s.elapsed_ns, v === undefined ? null : v]);
    });
    return out;
  }

  // A sampled quantity as steps: a level or counter holds from its sample to the next; a
  // rate covers the interval before its sample. Never a ramp between samples.
  function stepPoints(pts, lane, range, max) {
    var segs = [], seg = [], w = range.hi - range.lo;
    function x(t) { return Math.max(0, Math.min(1000, (t - range.lo) / w * 1000)).toFixed(2); }
    function y(v) { return (96 - (max > 0 ? v / max * 90 : 0)).toFixed(2); }
    function flush() { if (seg.length) segs.push(seg); seg = []; }
    pts.forEach(function (p, i) {
      if (p[1] === null || p[1] === undefined) { flush(); return; }
      if (lane.series === "rate") {
        if (p[0] < range.lo || p[2] > range.hi) return;
        if (seg.length && seg[seg.length - 1][0] !== x(p[2])) flush();
        seg.push([x(p[2]), y(p[1])], [x(p[0]), y(p[1])]);
        return;
      }
      var next = pts[i + 1];
      var until = next && next[1] !== null && next[1] !== undefined ? next[0] : p[0];
      if (until < range.lo || p[0] > range.hi) return;
      seg.push([x(p[0]), y(p[1])], [x(until), y(p[1])]);
      if (!next || next[1] === null || next[1] === undefined) flush();
    });
    flush();
    return segs;
  }

  function renderResources(root, b, range) {
    var t = b.detail.telemetry;
    if (t.state === "unavailable" || !t.lanes.length) {
      var row = laneRow("resource", "Resources", "no lane", { "data-lane": "resources" });
      row.track.appendChild(gapMarker("telemetry_unavailable", "Resource telemetry unavailable: " + dash(t.reason), null));
      root.appendChild(row.lane);
      return;
    }
    t.lanes.forEach(function (lane) {
      var meta = lane.host + " · " + lane.unit + (lane.basis ? " · basis " + lane.basis : "") + " · " + lane.time_uncertainty;
      var row = laneRow("resource", lane.label, meta, { "data-lane": lane.lane_id, "data-host": lane.host,
        "data-device": lane.device === null || lane.device === undefined ? "" : String(lane.device), "data-source": lane.source,
        "data-series": lane.series });
      root.appendChild(row.lane);
      if (t.aligned === false) {
        row.track.appendChild(gapMarker("clock_domain_mismatch",
          "Clock-domain mismatch: samples are in " + t.clock_domain + "; not placed on this time axis", null));
        return;
      }
      if (lane.status !== "ok") {
        row.track.appendChild(gapMarker("source_unavailable", lane.label + ": " + lane.status + (lane.reason ? " — " + lane.reason : ""), null));
      }
      var pts = laneValues(lane, b.samples[lane.source] || []);
      var max = 0, n = 0;
      pts.forEach(function (p) { if (p[1] !== null) { n++; if (p[1] > max) max = p[1]; } });
      if (n) {
        var svg = svgEl("svg");
        svg.setAttribute("class", "curve");
        svg.setAttribute("viewBox", "0 0 1000 100");
        svg.setAttribute("preserveAspectRatio", "none");
        svg.setAttribute("aria-hidden", "true");
        stepPoints(pts, lane, range, max).forEach(function (seg) {
          var pl = svgEl("polyline");
          pl.setAttribute("points", seg.map(function (q) { return q[0] + "," + q[1]; }).join(" "));
          svg.appendChild(pl);
        });
        row.track.appendChild(svg);
        var top = lane.unit === "fraction" ? num(max) : lane.series === "rate" ? num(Math.round(max * 10) / 10) : String(Math.round(max));
        row.track.appendChild(el("span", "scale", "max " + top + " " + lane.unit + " · " + plural(n, "sample", "samples")));
      }
      lane.gaps.forEach(function (g) {
        row.track.appendChild(gapMarker("missing_samples", "no samples", range, g.start_ns, g.end_ns));
      });
      // Before the sampler started and after it stopped nothing was observed.
      if (t.started_elapsed_ns !== null && t.started_elapsed_ns > range.lo) {
        row.track.appendChild(gapMarker("not_sampled", "not sampled", range, range.lo, t.started_elapsed_ns));
      }
      if (t.stopped_elapsed_ns !== null && t.stopped_elapsed_ns < range.hi) {
        row.track.appendChild(gapMarker("not_sampled", "not sampled", range, t.stopped_elapsed_ns, range.hi));
      }
      if (!n && !lane.gaps.length) {
        row.track.appendChild(gapMarker("missing_samples", "no samples in this lane", null));
      }
    });
  }

  function wireKeys(lanes) {
    lanes.forEach(function (list, li) {
      list.sort(function (a, b) { return a.start - b.start; });
      list.forEach(function (s, i) {
        s.button.tabIndex = i === 0 ? 0 : -1;
        s.button.addEventListener("keydown", function (ev) {
          var target = null;
          if (ev.key === "ArrowRight") target = list[i + 1];
          else if (ev.key === "ArrowLeft") target = list[i - 1];
          else if (ev.key === "Home") target = list[0];
          else if (ev.key === "End") target = list[list.length - 1];
          else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
            var step = ev.key === "ArrowDown" ? 1 : -1;
            for (var k = li + step; k >= 0 && k < lanes.length; k += step) {
              if (lanes[k].length && lanes[k][0].button && lanes[k][0].button.offsetParent !== null) {
                target = lanes[k].reduce(function (best, c) {
                  return Math.abs(c.start - s.start) < Math.abs(best.start - s.start) ? c : best;
                }, lanes[k][0]);
                break;
              }
            }
          } else return;
          ev.preventDefault();
          if (target) { s.button.tabIndex = -1; target.button.tabIndex = 0; target.button.focus(); }
        });
      });
    });
  }

  function select(s) {
    state.spans.forEach(function (x) { if (x.button) x.button.setAttribute("aria-pressed", "false"); if (x.row) x.row.setAttribute("aria-selected", "false"); });
    state.selected = s;
    if (s.button) s.button.setAttribute("aria-pressed", "true");
    if (s.row) s.row.setAttribute("aria-selected", "true");
    renderDetail(s);
  }

  function renderDetail(s) {
    var box = document.getElementById("detail");
    clear(box);
    if (!s) { box.appendChild(el("p", null, "Nothing selected. Select a span in the timeline or a row in the table.")); return; }
    var dl = el("dl");
    function row(k, v) { dl.appendChild(el("dt", null, k)); dl.appendChild(el("dd", null, v)); }
    row("Span", s.name + " (" + s.family + ", id " + s.id + ")");
    row("Trajectory", dash(s.caseId));
    row("Request id", dash(s.requestId));
    row("Start", s.start === null ? "unknown (start not in capture)" : ms(s.start) + " ms");
    row("Duration", s.start !== null && s.end !== null ? ms(s.end - s.start) + " ms" : "unknown");
    row("Status", statusText(s));
    row("Tokens (prompt / completion)", dash(s.prompt) + " / " + dash(s.completion));
    row("Energy", energyText(s));
    box.appendChild(dl);
  }

  function renderTable(b, spans) {
    var tbody = document.querySelector("#span-table tbody");
    var cap = document.getElementById("span-caption");
    clear(tbody);
    var d = b.detail;
    var rows = 0;
    if (d.timeline.state === "ok") {
      cap.textContent = spans.length + " span(s) from the verified timeline; start and duration in ms from the run's reference instant; energy joined from report steps by trajectory and step order only.";
      spans.slice().sort(function (a, b) {
        var x = a.start !== null ? a.start : a.end, y = b.start !== null ? b.start : b.end;
        return x - y || a.seq - b.seq;
      }).forEach(function (s) {
        var tr = el("tr");
        tr.setAttribute("data-span-id", String(s.id));
        tr.setAttribute("data-family", s.family);
        tr.setAttribute("aria-selected", "false");
        tr.appendChild(el("td", null, s.family === "phase" ? "phases" : dash(s.caseId)));
        tr.appendChild(el("td", null, s.name + " (" + s.family + ")"));
        tr.appendChild(el("td", "num", s.start === null ? "unknown" : ms(s.start)));
        tr.appendChild(el("td", "num", s.start !== null && s.end !== null ? ms(s.end - s.start) : "unknown"));
        tr.appendChild(el("td", null, statusText(s)));
        tr.appendChild(el("td", "num", s.family === "phase" ? "—" : dash(s.prompt) + " / " + dash(s.completion)));
        tr.appendChild(el("td", null, energyText(s)));
        tr.addEventListener("click", function () { select(s); });
        s.row = tr;
        tbody.appendChild(tr);
        rows++;
      });
    } else {
      var steps = [];
      (d.report.jobs || []).forEach(function (j) { j.trajectories.forEach(function (t) { t.steps.forEach(function (st) { steps.push([t.id, st]); }); }); });
      cap.textContent = "No verified timeline: " + steps.length + " step(s) from report.json instead (timeline " + d.timeline.state + ").";
      steps.forEach(function (p) {
        var st = p[1];
        var tr = el("tr");
        tr.setAttribute("data-step-id", String(st.step_id));
        tr.appendChild(el("td", null, p[0]));
        tr.appendChild(el("td", null, st.name + " (" + st.kind + ", report step)"));
        tr.appendChild(el("td", "num", ms(st.start_ns)));
        tr.appendChild(el("td", "num", ms(st.end_ns - st.start_ns)));
        tr.appendChild(el("td", null, dash(st.status) + (st.failure_code && st.failure_code !== st.status ? " (" + st.failure_code + ")" : "")));
        tr.appendChild(el("td", "num", st.kind === "tool" ? "—" : dash(st.prompt_tokens) + " / " + stepTokens(st)));
        tr.appendChild(el("td", null, st.energy.value === null ? "— unavailable (" + st.energy.basis + (st.energy.reason ? ": " + st.energy.reason : "") + ")" : st.energy.value + " mJ (" + st.energy.basis + ")"));
        tbody.appendChild(tr);
        rows++;
      });
    }
    // A long table (a load run) starts folded; its summary says how long it is.
    document.getElementById("span-details").open = rows <= MAX_OPEN_TABLE_ROWS;
    document.getElementById("span-summary").textContent = "Every span as a table row (" + plural(rows, "row", "rows") +
      (rows > MAX_OPEN_TABLE_ROWS ? "; open to list them)" : ")");
  }


  // A job not run (the run was cancelled before it started) is neither a pass nor a
  // failure: no failure mark. A job cut short by Ctrl-C is cancelled (never a pass); a job
  // whose endpoint failed the preflight is a setup error.
  function jobStatusText(status) {
    if (status === "pass") return "✓ pass";
    if (status === "not_run") return "○ not run";
    if (status === "cancelled") return "⊘ cancelled";
    if (status === "setup_error") return "⚠ setup error";
    return "✕ " + status;
  }

  // A job's duration: "—" for a job that did not run (no duration, never 0).
  function jobDuration(j) {
    return j.status === "not_run" || j.status === "setup_error" ? "—" : ms(j.duration_ns);
  }

  // One gate row: the figure rounded as the console rounds it.
  function verdictText(v) {
    var value = v.value === null || v.value === undefined ? "unavailable" : num(v.value);
    // A streamed percentile states its bound after its value.
    if (v.error_bound) value += " " + v.error_bound;
    return v.gate + " " + v.outcome + " (" + value + " " + v.comparison + " " + num(v.bound) + (v.unit ? " " + v.unit : "") +
      "; " + v.basis + (v.tokens === "client_estimate" ? ", tokens client-estimated" : "") + ")";
  }

  // A report step's output tokens: the server's count, or the client's estimate marked
  // `~` with its basis (the server sent no usage).
  function stepTokens(st) {
    if (st.completion_tokens !== null && st.completion_tokens !== undefined) return String(st.completion_tokens);
    if (st.completion_tokens_estimate) return "~" + st.completion_tokens_estimate.tokens + " (client estimate)";
    return "—";
  }

  function renderJobs(d) {
    var box = document.getElementById("jobs");
    clear(box);
    if (d.report.state !== "ok") { box.appendChild(el("p", null, "report.json " + d.report.state + (d.report.fault ? " (" + d.report.fault + ")" : ""))); return; }
    var table = el("table", "jobs-table");
    var head = el("tr");
    ["Job", "Kind", "Status", "Duration (ms)", "Gates"].forEach(function (h) { var th = el("th", null, h); th.scope = "col"; head.appendChild(th); });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
    var tb = el("tbody");
    d.report.jobs.forEach(function (j) {
      var tr = el("tr");
      tr.appendChild(el("td", null, j.id));
      tr.appendChild(el("td", null, j.kind));
      tr.setAttribute("data-job-status", j.status);
      tr.appendChild(el("td", null, jobStatusText(j.status)));
      tr.appendChild(el("td", "num", jobDuration(j)));
      tr.appendChild(el("td", null, j.verdicts.map(verdictText).join("; ")));
      tb.appendChild(tr);
    });
    table.appendChild(tb);
    var wrap = el("div", "table-wrap");
    wrap.appendChild(table);
    box.appendChild(wrap);
  }

  // ---------- charts ----------
  // The server draws each chart as an SVG element tree (tag, attributes, children, text);
  // the page builds exactly those elements with createElementNS, setAttribute and
  // textContent, never by parsing markup. Only drawing elements are built, and no event
  // handler, link or style attribute is set, whatever the tree holds.
  var SVG_TAGS = { svg: 1, g: 1, title: 1, line: 1, polyline: 1, rect: 1, circle: 1, text: 1 };
  function svgTree(n) {
    if (!n || !Object.prototype.hasOwnProperty.call(SVG_TAGS, n.tag)) return null;
    var e = svgEl(n.tag);
    (n.attrs || []).forEach(function (a) {
      var k = String(a[0]);
      if (!/^[a-z][a-z0-9-]*$/i.test(k) || /^on/i.test(k) || /href/i.test(k) || k.toLowerCase() === "style") return;
      e.setAttribute(k, String(a[1]));
    });
    if (n.text !== undefined && n.text !== null) e.textContent = String(n.text);
    (n.children || []).forEach(function (c) { var x = svgTree(c); if (x) e.appendChild(x); });
    return e;
  }

  // The static report carries its charts as inline SVG already (b.charts is absent); the
  // dashboard draws those GET /v1/charts returned, then a note per chart left out.
  function renderCharts(b) {
    if (!b.charts) return;
    var box = document.getElementById("charts");
    clear(box);
    (b.charts.charts || []).forEach(function (c) { var e = svgTree(c.svg); if (e) box.appendChild(e); });
    (b.charts.notes || []).forEach(function (n) {
      var p = el("p", "chart-note", n.text);
      p.setAttribute("data-omitted", n.kind);
      box.appendChild(p);
    });
  }

  // ---------- start ----------
  function fail(err) {
    app.setAttribute("data-state", "error");
    if (err && err.status === 401) {
      sessionStorage.removeItem("inferscope-token");
      state.token = null;
      showTokenForm("The server refused the token (401). Enter the API token.");
      return;
    }
    setStatus("Error: " + (err && err.message ? err.message : String(err)), true);
  }

  function showTokenForm(msg) {
    var f = document.getElementById("token-form");
    f.hidden = false;
    setStatus(msg, true);
    document.getElementById("token-input").focus();
  }

  function openRun(runId, runs) {
    app.setAttribute("data-state", "loading");
    setStatus("Loading run " + runId + "…", false);
    return loadBundle(runId, runs).then(render);
  }

  function startApi() {
    var frag = fragment();
    if (frag.token) {
      state.token = frag.token;
      try { sessionStorage.setItem("inferscope-token", frag.token); } catch (e) { /* storage off */ }
    } else {
      try { state.token = sessionStorage.getItem("inferscope-token"); } catch (e) { state.token = null; }
    }
    setFragmentRun(frag.run);
    if (!state.token) { showTokenForm("Enter the API token to read runs."); return; }
    loadRuns().then(function (runs) {
      if (!runs.length) { app.setAttribute("data-state", "empty"); setStatus("No runs under the runs root.", false); return; }
      var pick = frag.run && runs.some(function (r) { return r.run_id === frag.run; }) ? frag.run : runs[runs.length - 1].run_id;
      var sel = document.getElementById("run-select");
      sel.onchange = function () { setFragmentRun(sel.value); openRun(sel.value, runs).catch(fail); };
      return openRun(pick, runs);
    }).catch(fail);
  }

  document.getElementById("token-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = document.getElementById("token-input").value.trim();
    if (!v) return;
    state.token = v;
    try { sessionStorage.setItem("inferscope-token", v); } catch (e) { /* storage off */ }
    document.getElementById("token-form").hidden = true;
    startApi();
  });

  var inline = inlineBundle();
  if (inline) {
    try { render(inline); } catch (e) { fail(e); }
  } else {
    startApi();
  }
})();
