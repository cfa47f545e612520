// inferscope-bench run timeline (served by `inferscope-bench serve`, or inlined by
// `inferscope-bench report RUN_DIR --format html`). Plain JavaScript, no framework, no
// request to any other origin. Every text that comes from an artifact is inserted with
// textContent, never as HTML.
(function () {
  "use strict";

  var MAX_PAGES = 50;
  var app = document.getElementById("app");
  var statusEl = document.getElementById("status");
  var state = { token: null, bundle: null, spans: [], selected: null };

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
          end: null, status: "unknown_end", caseId: e.case_id, requestId: e.request_id,
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
            end: e.elapsed_ns, status: e.status, caseId: null, requestId: e.request_id,
            parent: e.parent_span_id, seq: e.seq, prompt: e.prompt_tokens,
            completion: completionOf(e), failure: e.failure_code, startKnown: false });
        }
      }
    });
    // An orphan end inherits the lane of its parent's trajectory when known.
    orphans.forEach(function (o) { list.push(o); });
    return list;
  }

  // Energy per span from the report's steps, joined by identity only: the same trajectory
  // (case_id) and the same order and kind of steps. Any mismatch leaves energy unjoined.
  function joinEnergy(spans, detail) {
    var steps = {};
    (detail.report.jobs || []).forEach(function (j) {
      j.trajectories.forEach(function (t) { steps[t.id] = t.steps; });
    });
    var lanes = {};
    spans.forEach(function (s) {
      if ((s.family === "request" || s.family === "fixture") && s.caseId && s.startKnown) {
        (lanes[s.caseId] = lanes[s.caseId] || []).push(s);
      }
    });
    Object.keys(lanes).forEach(function (caseId) {
      var ss = lanes[caseId].slice().sort(function (a, b) { return a.seq - b.seq; });
      var st = steps[caseId];
      var ok = st && st.length === ss.length && ss.every(function (s, i) {
        var p = st[i];
        return s.family === "request" ? p.kind === "llm_call" : (p.kind === "tool" && p.name === s.name);
      });
      ss.forEach(function (s, i) {
        s.energyJoin = ok ? "joined" : "no_join";
        if (ok) {
          s.energy = st[i].energy.value; s.energyBasis = st[i].energy.basis;
          s.energyReason = st[i].energy.reason; s.stepId = st[i].step_id;
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
    return s.name + " · " + who + " · start " + ms(s.start) + " ms · " +
      (s.end !== null && s.start !== null ? "duration " + ms(s.end - s.start) + " ms" : "duration unknown") +
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
    renderRunSelect(b);
    renderSummary(d);
    renderGaps(d, b);
    renderLegend();
    renderTimeline(b, spans);
    renderTable(b, spans);
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
    [["family-phase", "phase span"], ["family-request", "model request"], ["family-fixture", "fixture tool"],
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

  function place(node, range, a, z) {
    var w = range.hi - range.lo;
    var left = Math.max(0, (a - range.lo) / w * 100);
    var right = Math.min(100, (z - range.lo) / w * 100);
    node.style.left = left + "%";
    node.style.width = Math.max(0, right - left) + "%";
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

  function renderAxis(root, range) {
    var axis = el("div", "axis");
    axis.appendChild(el("div", "label-spacer", "ms"));
    var ticks = el("div", "ticks");
    for (var i = 0; i <= 4; i++) {
      var t = el("span", "tick" + (i === 0 ? " first" : i === 4 ? " last" : ""), ms(range.lo + (range.hi - range.lo) * i / 4).replace(/\.\d+$/, "") + " ms");
      t.style.left = (i * 25) + "%";
      ticks.appendChild(t);
    }
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
    btn.appendChild(el("span", null, prefix + s.name + suffix));
    var end = s.end !== null ? s.end : captureEnd;
    place(btn, range, s.start, Math.max(end, s.start));
    btn.addEventListener("click", function () { select(s); });
    s.button = btn;
    return btn;
  }

  // A merged run (issue 17): one lane group per shard, its trajectories' steps from the
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
        t.steps.forEach(function (st) {
          var s = { id: st.step_id, family: st.kind === "llm_call" ? "request" : "fixture", name: st.name,
            start: st.start_ns, end: st.end_ns, status: st.status || "unknown", caseId: id, requestId: null,
            parent: null, seq: st.step_id, prompt: st.prompt_tokens, completion: st.completion_tokens,
            failure: st.failure_code, startKnown: true, energyJoin: "joined", energy: st.energy.value,
            energyBasis: st.energy.basis, energyReason: st.energy.reason, stepId: st.step_id };
          row.track.appendChild(spanButton(s, range, range.hi));
        });
        root.appendChild(row.lane);
      });
    });
  }

  function renderTimeline(b, spans) {
    var root = document.getElementById("timeline");
    clear(root);
    var d = b.detail;
    var range = timeRange(b, spans);
    var captureEnd = d.timeline.end_elapsed_ns !== null && d.timeline.end_elapsed_ns !== undefined ? d.timeline.end_elapsed_ns : range.hi;
    renderAxis(root, range);

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

    var shardGroups = d.report.shards || [];
    if (shardGroups.length) {
      renderShardGroups(root, d, shardGroups, range);
    } else {
      root.appendChild(el("div", "group-title", "Trajectories: model requests and fixture tools"));
      if (d.timeline.state === "ok") {
        var byCase = new Map();
        spans.forEach(function (s) {
          if (s.family === "phase") return;
          var key = s.caseId || "(no case id)";
          if (!byCase.has(key)) byCase.set(key, []);
          byCase.get(key).push(s);
        });
        if (!byCase.size) {
          var none = laneRow("trajectory", "No request or tool spans", null, { "data-lane": "none" });
          none.track.appendChild(gapMarker("capture_partial", "No request or fixture span in the capture", null));
          root.appendChild(none.lane);
        }
        byCase.forEach(function (list, key) {
          var row = laneRow("trajectory", key, list.length + " span(s)", { "data-trajectory": key });
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
          root.appendChild(row.lane);
        });
        d.gaps.forEach(function (g) {
          if (g.kind === "seq_gap" && g.start_ns !== null && g.end_ns !== null) {
            var row = laneRow("gap", "Lost events", g.label, { "data-lane": "lost-events" });
            row.track.appendChild(gapMarker("seq_gap", g.label, range, g.start_ns, g.end_ns));
            root.appendChild(row.lane);
          }
        });
        if (d.timeline.dropped_count > 0) {
          var dr = laneRow("gap", "Dropped events", d.timeline.dropped_count + " not recorded", { "data-lane": "dropped" });
          var lastKept = spans.reduce(function (m, s) { return Math.max(m, s.end !== null ? s.end : s.start || 0); }, range.lo);
          dr.track.appendChild(gapMarker("dropped_events", d.timeline.dropped_count + " events dropped after the capture filled; what happened here is not recorded", range, lastKept, captureEnd));
          root.appendChild(dr.lane);
        }
      } else {
        var empty = laneRow("trajectory", "Trajectories", null, { "data-lane": "trajectories" });
        empty.track.appendChild(gapMarker(d.timeline.state === "unavailable" ? "capture_unavailable" : "integrity_error",
          d.timeline.state === "unavailable" ? "No spans: timeline unavailable (the table lists report steps instead)" : "No spans: timeline failed verification", null));
        root.appendChild(empty.lane);
      }

    }
    root.appendChild(el("div", "group-title", "Resources, per host and device (never summed)"));
    renderResources(root, b, range);
    wireKeys(lanesForKeys);
  }

  function sampleValue(lane, s) {
    if (lane.source === "power") return s.device === lane.device ? s.power_mw : undefined;
    if (lane.source === "proc") return s.rss_bytes;
    if (lane.source === "metrics") return s.gauges ? s.gauges[lane.quantity] : null;
    return null;
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
        "data-device": lane.device === null ? "" : String(lane.device), "data-source": lane.source });
      root.appendChild(row.lane);
      if (t.aligned === false) {
        row.track.appendChild(gapMarker("clock_domain_mismatch",
          "Clock-domain mismatch: samples are in " + t.clock_domain + "; not placed on this time axis", null));
        return;
      }
      if (lane.status !== "ok") {
        row.track.appendChild(gapMarker("source_unavailable", lane.label + ": " + lane.status + (lane.reason ? " — " + lane.reason : ""), null));
      }
      var samples = b.samples[lane.source] || [];
      var pts = [];
      var max = 0;
      samples.forEach(function (s) {
        var v = sampleValue(lane, s);
        if (v === undefined) return;
        pts.push([s.elapsed_ns, v]);
        if (v !== null && v > max) max = v;
      });
      if (pts.length) {
        var svg = svgEl("svg");
        svg.setAttribute("class", "curve");
        svg.setAttribute("viewBox", "0 0 1000 100");
        svg.setAttribute("preserveAspectRatio", "none");
        svg.setAttribute("aria-hidden", "true");
        var w = range.hi - range.lo;
        var seg = [];
        function flush() {
          if (seg.length > 1) {
            var pl = svgEl("polyline");
            pl.setAttribute("points", seg.join(" "));
            svg.appendChild(pl);
          } else if (seg.length === 1) {
            var xy = seg[0].split(",");
            var c = svgEl("rect");
            c.setAttribute("class", "point");
            c.setAttribute("x", String(Number(xy[0]) - 1)); c.setAttribute("y", String(Number(xy[1]) - 1));
            c.setAttribute("width", "2"); c.setAttribute("height", "2");
            svg.appendChild(c);
          }
          seg = [];
        }
        pts.forEach(function (p) {
          if (p[0] < range.lo || p[0] > range.hi) return;
          if (p[1] === null) { flush(); return; }
          var x = (p[0] - range.lo) / w * 1000;
          var y = 96 - (max > 0 ? p[1] / max * 90 : 0);
          seg.push(x.toFixed(2) + "," + y.toFixed(2));
        });
        flush();
        row.track.appendChild(svg);
        var scale = el("span", "scale", "max " + (lane.unit === "fraction" ? max.toFixed(4) : Math.round(max)) + " " + lane.unit + " · " + pts.length + " samples");
        row.track.appendChild(scale);
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
      if (!pts.length && !lane.gaps.length) {
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
              if (lanes[k].length) {
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
      });
    }
  }

  // A job not run (the run was cancelled before it started) is neither a pass nor a
  // failure: no failure mark. A job cut short by Ctrl-C is cancelled (never a pass); a job
  // whose endpoint failed the preflight is a setup error.
  function jobStatusText(status) {
    if (status === "pass") return "✓ pass";
    if (status === "not_run") return "⏹ not run";
    if (status === "cancelled") return "⏹ cancelled";
    if (status === "setup_error") return "⚠ setup error";
    return "✕ " + status;
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
      tr.appendChild(el("td", "num", ms(j.duration_ns)));
      tr.appendChild(el("td", null, j.verdicts.map(function (v) {
        return v.gate + " " + v.outcome + " (" + (v.value === null ? "unavailable" : v.value) + " " + v.comparison + " " + v.bound + (v.unit ? " " + v.unit : "") + "; " + v.basis + (v.tokens === "client_estimate" ? ", tokens client-estimated" : "") + ")";
      }).join("; ")));
      tb.appendChild(tr);
    });
    table.appendChild(tb);
    var wrap = el("div", "table-wrap");
    wrap.appendChild(table);
    box.appendChild(wrap);
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
