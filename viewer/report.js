/* SPDX-License-Identifier: MIT */
/*
 * viewer/report.js: draws syncspy's HTML report from the JSON that report/out_html.c embeds in
 * <script id="syncspy-data">: {"report": the report JSON (docs/report-json.md), "timeline":
 * the per-rank timeline and call-site payload (docs/viewer.md)}.
 *
 * Rules this file keeps:
 *   VIEW-1  every string from the data reaches the page through textContent or canvas text,
 *           never innerHTML: a call site whose text is markup (an img tag with an
 *           onerror handler) stays text.
 *   VIEW-2  nothing is fetched: no network, no fonts, no frameworks (the page works offline,
 *           from one file, and its Content-Security-Policy forbids fetches anyway).
 *   VIEW-3  when rendering finished, body[data-rendered] is "ok"; an uncaught error sets
 *           body[data-error]. The headless-browser test reads both.
 */
(function () {
	"use strict";

	window.addEventListener("error", function (ev) {
		document.body.dataset.error = String(ev.message || ev.type);
	});

	var raw = document.getElementById("syncspy-data").textContent;
	var data = raw.trim() ? JSON.parse(raw) : {};
	var report = data.report || {};
	var timeline = data.timeline || {};
	var tlRanks = timeline.ranks || [];
	var classes = timeline.classes || [];

	/* Class colors for the canvas and the tables: sync points warm, enqueues cool. */
	var CLASS_COLORS = {
		S1: "#9b1c1c", S2: "#d62828", S3: "#e85d04", S4: "#f48c06", S5: "#c9184a",
		S6: "#7b2cbf", S7: "#ff5d8f", E1: "#4a7bd0", E2: "#63a4d9", E3: "#2a9d8f",
		N1: "#6a994e", N2: "#38b000", X1: "#a0a8b5"
	};
	var TOP_FINDINGS = 8;

	/* ------------------------------------------------------------ small helpers */

	/* Builds an element; text goes through textContent only (VIEW-1). */
	function el(tag, cls, text) {
		var node = document.createElement(tag);
		if (cls)
			node.className = cls;
		if (text !== undefined && text !== null)
			node.textContent = String(text);
		return node;
	}

	function isNum(v) {
		return typeof v === "number" && isFinite(v);
	}

	function fmtInt(n) {
		return isNum(n) ? Math.round(n).toLocaleString("en-US") : "-";
	}

	/* Nanoseconds as the shortest readable unit: 950 ns, 1.47 us, 7.95 ms, 2.10 s. */
	function fmtNs(ns) {
		if (!isNum(ns))
			return "-";
		var a = Math.abs(ns);
		if (a < 1e3)
			return ns.toFixed(0) + " ns";
		if (a < 1e6)
			return (ns / 1e3).toPrecision(3) + " us";
		if (a < 1e9)
			return (ns / 1e6).toPrecision(3) + " ms";
		return (ns / 1e9).toFixed(a < 1e11 ? 3 : 1) + " s";
	}

	function fmtBytes(b) {
		if (!isNum(b) || b < 0)
			return "";
		var units = ["B", "KiB", "MiB", "GiB", "TiB"];
		var i = 0;
		while (b >= 1024 && i < units.length - 1) {
			b /= 1024;
			i++;
		}
		return (i ? b.toFixed(1) : b) + " " + units[i];
	}

	function classBadge(name) {
		var b = el("span", "cls", name);
		b.style.background = CLASS_COLORS[name] || "#888";
		return b;
	}

	function rankLabel(r) {
		return r === null || r === undefined ? "-" : String(r);
	}

	/* A folded finding's ranks (ascending) as runs, "0-7,9,12-15", at most 8 runs then "...". */
	function rankRuns(ranks) {
		var runs = [];
		for (var i = 0; i < ranks.length && runs.length <= 8; ) {
			var j = i;
			while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1)
				j++;
			runs.push(runs.length === 8 ? "..." : j > i ? ranks[i] + "-" + ranks[j] : String(ranks[i]));
			i = j + 1;
		}
		return runs.join(",");
	}

	/* The command of a recording, short: the program's file name (the script's, after an
	   interpreter) and the first arguments. */
	var INTERPRETER = /^(python[0-9.]*|pypy[0-9.]*|ba?sh|sh|node|perl|ruby)$/;
	function shortCommand(cmdline) {
		var words = String(cmdline || "").trim().split(/\s+/).filter(Boolean);
		if (words.length > 1 && INTERPRETER.test(words[0].replace(/^.*\//, "")) && words[1][0] !== "-")
			words.shift();
		if (!words.length)
			return "";
		words[0] = words[0].replace(/^.*\//, "");
		var text = words.join(" ");
		return text.length > 48 ? text.slice(0, 47) + "\u2026" : text;
	}

	/* A recording's name: its rank where known, else its command and pid (meta). t: its
	   timeline payload (docs/viewer.md), r: its report rank, either may be empty. */
	function recordingName(t, r) {
		t = t || {};
		r = r || {};
		var rank = isNum(t.rank) ? t.rank : r.rank;
		if (isNum(rank))
			return "rank " + rank;
		var pid = t.pid !== undefined ? t.pid : r.pid;
		var cmd = shortCommand(t.cmdline);
		return (cmd || "process") + (pid !== undefined && pid !== null ? " (pid " + pid + ")" : "");
	}

	function median(values) {
		var v = values.filter(isNum).sort(function (a, b) { return a - b; });
		if (!v.length)
			return NaN;
		var m = v.length >> 1;
		return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
	}

	/* ------------------------------------------------------------ header */

	function unique(values) {
		var seen = {}, out = [];
		values.forEach(function (v) {
			if (v !== undefined && v !== null && v !== "" && !seen["$" + v]) {
				seen["$" + v] = true;
				out.push(String(v));
			}
		});
		return out;
	}

	function renderHeader() {
		var dl = document.getElementById("profiled");
		var ranks = report.ranks || [];
		function row(label, value) {
			if (value === undefined || value === null || value === "")
				return;
			dl.appendChild(el("dt", null, label));
			dl.appendChild(el("dd", null, value));
		}
		var cmdlines = unique(tlRanks.map(function (r) { return r.cmdline; }));
		var hosts = unique(ranks.map(function (r) { return r.host; })
			.concat(tlRanks.map(function (r) { return r.host; })));
		var nranks = Math.max(ranks.length, tlRanks.length);
		var sync = 0, blocked = 0, haveTotals = false;
		ranks.forEach(function (r) {
			if (isNum(r.sync_points)) { sync += r.sync_points; haveTotals = true; }
			if (isNum(r.blocked_ns)) blocked += r.blocked_ns;
		});
		row("command", cmdlines.length > 3 ? cmdlines.slice(0, 3).join("\n") + "\n..." : cmdlines.join("\n"));
		row("hosts", hosts.join(", "));
		row("processes", nranks ? String(nranks) : "none");
		if (haveTotals)
			row("sync points", fmtInt(sync) + " calls, host blocked " + fmtNs(blocked) + " in all");
		row("recorded by", unique(tlRanks.map(function (r) { return r.syncspy_version; }))
			.map(function (v) { return "syncspy " + v; }).join(", "));
		if (hosts.length)
			document.title = "syncspy report: " + hosts.join(", ");
	}

	/* ------------------------------------------------------------ findings */

	function renderFindings() {
		var box = document.getElementById("findings");
		var findings = (report.findings || []).slice();
		if (!data.report) {
			box.appendChild(el("p", "note", "No report data in this file: only the timeline and call sites are shown."));
			return;
		}
		if (!findings.length) {
			box.appendChild(el("p", "note", "No findings: no rule found a wait worth fixing."));
			return;
		}
		/* The report's order (ANALYSIS-1 in report/analysis.h): the costliest per step first,
		   what happened once (`info`) last. */
		if (findings[0].severity === "info")
			box.appendChild(el("p", "note", "No findings in the steady state: what is listed happened once (setup, warm-up, teardown)."));
		findings.forEach(function (f, i) {
			var sev = String(f.severity || "note").toLowerCase();
			var card = el("div", "finding sev-" + sev.replace(/[^a-z]/g, ""));
			card.dataset.rule = String(f.rule || "");
			var title = el("div", "title");
			title.appendChild(el("span", "sev", sev));
			title.appendChild(document.createTextNode(String(f.rule || "") +
				(f.title || f.message ? ": " + (f.title || f.message) : "")));
			card.appendChild(title);
			var facts = [];
			var ti = findingRank(i, f);
			if (Array.isArray(f.ranks) && f.ranks.length > 1) /* folded (ANALYSIS-5) */
				facts.push("ranks " + rankRuns(f.ranks) + " (" + f.ranks.length + ", worst rank " +
					rankLabel(f.rank) + ")");
			else if (ti >= 0)
				facts.push(recordingName(tlRanks[ti], reportRankOf(ti)));
			else if (f.rank !== undefined)
				facts.push("rank " + rankLabel(f.rank));
			if (isNum(f.count))
				facts.push(fmtInt(f.count) + (f.count === 1 ? " call" : " calls"));
			if (isNum(f.blocked_ns))
				facts.push(fmtNs(f.blocked_ns) + " blocked");
			if (isNum(f.cost_per_step_ns) && f.phase === "steady")
				facts.push(fmtNs(f.cost_per_step_ns) + " per step" +
					(isNum(f.share) ? " (" + (100 * f.share).toFixed(1) + "% of the step)" : ""));
			if (f.phase === "once")
				facts.push("once: not in the steady state");
			if (f.class)
				facts.push("class " + f.class);
			card.appendChild(el("div", "facts", facts.join(" \u00b7 ")));
			if (f.site)
				card.appendChild(el("div", "site mono", f.site));
			if (f.detail)
				card.appendChild(el("div", "detail", f.detail));
			var sp = f.spread || {};
			if (isNum(sp.cost_per_step_ns_max))
				card.appendChild(el("div", "spread", "across the ranks: cost per step min " +
					fmtNs(sp.cost_per_step_ns_min) + ", median " + fmtNs(sp.cost_per_step_ns_median) +
					", max " + fmtNs(sp.cost_per_step_ns_max) + "; the figures above are rank " +
					rankLabel(sp.worst_rank) + "'s"));
			if (f.advice && f.severity !== "info") /* once: nothing to fix per step */
				card.appendChild(el("div", "advice", f.advice));
			if (ti >= 0) { /* its calls on its recording's timeline: focusFinding, on the hash */
				var link = el("a", "goto", "show on the timeline \u2192");
				link.href = "#finding-" + i;
				card.appendChild(link);
				card.addEventListener("click", function (ev) {
					if (ev.target === link || (window.getSelection && String(window.getSelection())))
						return;
					if (location.hash === "#finding-" + i)
						focusFinding(i);
					else
						location.hash = "finding-" + i;
				});
			}
			/* The top findings first; the rest one click away. */
			if (i >= TOP_FINDINGS)
				card.hidden = true;
			box.appendChild(card);
		});
		if (findings.length > TOP_FINDINGS) {
			var more = el("button", "more", "show all " + findings.length + " findings");
			more.addEventListener("click", function () {
				Array.prototype.forEach.call(box.querySelectorAll(".finding"), function (c) { c.hidden = false; });
				more.remove();
			});
			box.appendChild(more);
		}
	}

	/* The timeline rank (index in tlRanks) a finding is about: report/out_html.c says it
	   (timeline.finding_ranks); else the one rank of that number; else -1. */
	function findingRank(i, f) {
		var known = (timeline.finding_ranks || [])[i];
		if (isNum(known) && known >= 0 && known < tlRanks.length)
			return known;
		if (!isNum(f.rank))
			return tlRanks.length === 1 ? 0 : -1;
		var hits = [];
		tlRanks.forEach(function (t, k) { if (t.rank === f.rank) hits.push(k); });
		return hits.length === 1 ? hits[0] : -1;
	}

	/* The report rank of timeline rank k (the same order, docs/viewer.md; else by host and pid). */
	function reportRankOf(k) {
		var ranks = report.ranks || [], t = tlRanks[k] || {};
		if (Array.isArray(timeline.ranks_shown)) /* many ranks: said, not searched */
			return ranks[timeline.ranks_shown[k]] || {};
		if (ranks[k] && ranks[k].pid === t.pid && ranks[k].host === t.host)
			return ranks[k];
		for (var i = 0; i < ranks.length; i++)
			if (ranks[i].pid === t.pid && ranks[i].host === t.host)
				return ranks[i];
		return ranks[k] || {};
	}

	/* ------------------------------------------------------------ per-rank comparison */

	/* Many ranks (docs/viewer.md): the timelines of some ranks only, timeline.ranks_shown[k]
	   the report rank of timeline rank k. */
	var shownOf = {};
	(timeline.ranks_shown || []).forEach(function (i, k) { shownOf[i] = k; });
	var RANK_ROWS = 64;

	/* The timeline payload of a report rank: the same pid on the same host, else the same place. */
	function timelineOf(r, i) {
		if (Array.isArray(timeline.ranks_shown))
			return shownOf[i] !== undefined ? tlRanks[shownOf[i]] : {};
		for (var k = 0; k < tlRanks.length; k++)
			if (tlRanks[k].pid === r.pid && tlRanks[k].host === r.host)
				return tlRanks[k];
		return tlRanks[i] || {};
	}

	function renderRanks() {
		var table = document.getElementById("ranks");
		var rows = (report.ranks || []).map(function (r, i) {
			var t = timelineOf(r, i);
			var row = Object.assign({}, r);
			row.threads = t.threads;
			row.streams = t.streams;
			row.name = recordingName(t, r);
			row.command = t.cmdline;
			row.panel = tlRanks.indexOf(t);
			/* per-step figures (docs/report-json.md, ranks[].steps) */
			var st = r.steps || {};
			if (isNum(st.count)) {
				row.steps = st.count ? st.steady + " of " + st.count : "none";
				row.step_ns = st.step_ns;
				row.syncs_per_step = st.sync_points_per_step;
				row.blocked_per_step = st.blocked_ns_per_step;
				row.idle_per_step = st.gpu_idle_ns_per_step;
			}
			return row;
		});
		if (!rows.length)
			rows = tlRanks.map(function (t) {
				return { rank: t.rank, host: t.host, pid: t.pid, threads: t.threads, streams: t.streams,
					dropped_events: t.dropped_events, name: recordingName(t), command: t.cmdline,
					panel: tlRanks.indexOf(t) };
			});
		/* Always there: who (name, rank, host, pid, command) and the step figures; the others
		   where some rank has them. */
		var ALWAYS = { name: 1, rank: 1, host: 1, pid: 1, command: 1, steps: 1, step_ns: 1,
			syncs_per_step: 1, blocked_per_step: 1 };
		var cols = [
			["name", "recording", "", String],
			["rank", "rank", "num", rankLabel], ["host", "host", "", String], ["pid", "pid", "num", String],
			["command", "command", "cmd mono", String],
			["wall_ns", "recorded", "num", fmtNs], ["steps", "steady steps", "num", String],
			["step_ns", "step", "num", fmtNs],
			["syncs_per_step", "syncs/step", "num", function (v) { return v.toFixed(2); }],
			["blocked_per_step", "blocked/step", "num", fmtNs],
			["idle_per_step", "GPU idle/step", "num", fmtNs],
			["sync_points", "sync points", "num", fmtInt],
			["blocked_ns", "host blocked", "num", fmtNs], ["copies", "copies", "num", fmtInt],
			["copy_bytes", "copied", "num", fmtBytes], ["nccl_ops", "NCCL ops", "num", fmtInt],
			["nccl_ns", "in NCCL calls", "num", fmtNs], ["threads", "threads", "num", fmtInt],
			["streams", "streams", "num", fmtInt], ["dropped_events", "dropped", "num", fmtInt]
		].filter(function (c) {
			return ALWAYS[c[0]] || rows.some(function (r) { return r[c[0]] !== undefined && r[c[0]] !== null; });
		});
		var head = el("tr");
		cols.forEach(function (c) { head.appendChild(el("th", c[2], c[1])); });
		table.appendChild(head);
		/* The report says which totals deviate (docs/report-json.md, deviates); without it, a
		   value a quarter above its column's median is highlighted. */
		var medians = {};
		cols.forEach(function (c) {
			medians[c[0]] = median(rows.map(function (r) { return r[c[0]]; }));
		});
		function deviates(r, key) {
			if (Array.isArray(r.deviates))
				return r.deviates.indexOf(key) >= 0;
			var v = r[key], m = medians[key];
			return rows.length > 1 && (key === "sync_points" || key === "blocked_ns") && isNum(v) &&
				v > m * 1.25 && v - m > (key === "blocked_ns" ? 1e6 : 1);
		}
		/* Beyond RANK_ROWS ranks, the rows of the ranks with a timeline and those that deviate
		   first (up to RANK_ROWS, in rank order), the others one click away. */
		var later = [];
		if (rows.length > RANK_ROWS) {
			var first = rows.filter(function (r) {
				return r.panel >= 0 || (Array.isArray(r.deviates) && r.deviates.length);
			}).slice(0, RANK_ROWS);
			later = rows.filter(function (r) { return first.indexOf(r) < 0; });
			rows = first;
		}
		rows.forEach(addRow);
		if (later.length) {
			var all = el("button", "more", "show the other " + later.length + " of " +
				(rows.length + later.length) + " ranks (those above have a timeline or a total off the median)");
			all.addEventListener("click", function () {
				later.forEach(addRow);
				all.remove();
			});
			table.parentNode.insertBefore(all, table.nextSibling);
		}
		function addRow(r) {
			var tr = el("tr");
			cols.forEach(function (c) {
				var v = r[c[0]];
				var td = el("td", c[2], v === undefined || v === null || v === "" ? "-" : c[3](v));
				if (c[0] === "command" && v)
					td.title = String(v);
				if (deviates(r, c[0])) {
					td.classList.add("outlier");
					td.title = "median of the ranks: " + c[3](medians[c[0]]);
				}
				tr.appendChild(td);
			});
			/* a click shows the recording's timeline */
			if (r.panel >= 0) {
				tr.classList.add("linked");
				tr.addEventListener("click", function () {
					var p = panels[r.panel];
					if (p)
						p.canvas.parentNode.scrollIntoView({ block: "start" });
				});
			}
			table.appendChild(tr);
		}
	}

	/* ------------------------------------------------------------ timeline */

	var LANE_H = 18, SYNC_STRIP = 4, AXIS_H = 22, GUTTER = 190, PAD_TOP = 4;
	var C_T = 0, C_DUR = 1, C_API = 2, C_CLS = 3, C_TLANE = 4, C_SLANE = 5, C_SITE = 6, C_COUNT = 7,
		C_BYTES = 8;
	var panels = [];
	/* Each recording has its own time axis (a view: shown [t0, t1], whole [min, max], its
	   panels), shared only by the ranks of one job (sameJob). */
	var views = [];
	var tooltip = document.getElementById("tooltip");

	/* Prepares one rank: calls sorted by start, the call indexes of each lane, lookup maps. */
	function preparePanel(r) {
		var calls = r.calls || [];
		var lanes = (r.lanes || []).map(function (l) { return { info: l, idx: [], maxDur: 0 }; });
		calls.sort(function (a, b) { return a[C_T] - b[C_T]; });
		calls.forEach(function (c, i) {
			[c[C_TLANE], c[C_SLANE]].forEach(function (ln) {
				if (ln === undefined || ln < 0 || !lanes[ln])
					return;
				lanes[ln].idx.push(i);
				if (c[C_DUR] > lanes[ln].maxDur)
					lanes[ln].maxDur = c[C_DUR];
			});
		});
		var apis = {}, sites = {};
		(r.apis || []).forEach(function (a) { apis[a[0]] = a[1]; });
		(r.sites || []).forEach(function (s) { sites[s[0]] = s[1]; });
		return { r: r, calls: calls, lanes: lanes, apis: apis, sites: sites, offset: r.origin_ns || 0 };
	}

	function laneLabel(info) {
		if (info[0] === "thread")
			return "thread " + info[1] + (info[2] ? " " + info[2] : "");
		return "stream " + info[1] + (info[2] ? " (tid " + info[2] + ")" : "");
	}

	function renderLegend() {
		var box = document.getElementById("legend");
		classes.forEach(function (c) {
			var item = el("span");
			item.title = c[2];
			var sw = el("span", "swatch");
			sw.style.background = CLASS_COLORS[c[0]] || "#888";
			item.appendChild(sw);
			item.appendChild(document.createTextNode(c[0] + (c[1] ? " sync" : "")));
			box.appendChild(item);
		});
	}

	/* What a panel holds, from its own first call: [start, end] ns (the GPU code widens it). */
	function panelSpan(p) {
		var end = 0;
		p.calls.forEach(function (c) { end = Math.max(end, c[C_T] + c[C_DUR]); });
		return [0, end];
	}

	/* Ranks of one job share an axis: both know their rank, of the same world size (above 1), ran
	   the same command, at overlapping times, and no rank number twice. Anything else (runs of
	   several commands, or of one command at other times) gets an axis of its own. */
	function sameJob(v, p) {
		var a = v.panels[0].r, b = p.r;
		if (!isNum(a.rank) || !isNum(b.rank) || !isNum(a.world_size) || a.world_size < 2 ||
				a.world_size !== b.world_size || a.cmdline !== b.cmdline)
			return false;
		if (v.panels.some(function (q) { return q.r.rank === b.rank; }))
			return false;
		return p.start <= v.end && p.end >= v.start;
	}

	function renderTimelines() {
		var box = document.getElementById("timelines");
		if (!tlRanks.length) {
			box.appendChild(el("p", "note", "No timeline data in this file."));
			return;
		}
		tlRanks.forEach(function (r, i) {
			var p = preparePanel(r);
			p.index = i;
			/* where it sits on the report's axis: wall clock (origin_ns), less the clock offset the
			   report estimated for its host (ANALYSIS-4, docs/report-json.md clock_offset_ns) */
			var rr = reportRankOf(i);
			p.at = (r.origin_ns || 0) - (isNum(rr.clock_offset_ns) ? rr.clock_offset_ns : 0);
			var span = panelSpan(p);
			p.start = p.at + span[0];
			p.end = p.at + span[1];
			p.name = recordingName(r, rr);
			var v = views.filter(function (w) { return sameJob(w, p); })[0];
			if (!v) {
				v = { panels: [], start: p.start, end: p.end };
				views.push(v);
			}
			v.panels.push(p);
			v.start = Math.min(v.start, p.start);
			v.end = Math.max(v.end, p.end);
			p.view = v;
			panels.push(p);
		});
		/* Each axis from 0 at its first call to its last end: fit to the recording on open. */
		views.forEach(function (v, k) {
			v.index = k;
			v.min = 0;
			v.max = Math.max(v.end - v.start, 1) * 1.01;
			v.t0 = v.min;
			v.t1 = v.max;
			v.panels.forEach(function (p) { p.offset = p.at - v.start; });
		});
		panels.forEach(function (p) {
			var r = p.r, v = p.view;
			var panel = el("div", "rank-panel");
			panel.id = "recording-" + p.index;
			panel.dataset.name = p.name;
			panel.dataset.axis = String(v.index);
			panel.dataset.spanStart = String(p.start - v.start);
			panel.dataset.spanEnd = String(p.end - v.start);
			var head = el("h3");
			head.appendChild(el("span", "rec-name", p.name));
			var title = " \u00b7 " + (r.host || "?") + " pid " + (r.pid || "?") + " \u00b7 " +
				fmtInt(r.calls_shown) + " calls";
			if (r.truncated)
				title += " (first " + fmtInt(r.calls_shown) + " of " + fmtInt(r.calls_total) + ": see notes)";
			if (v.panels.length > 1)
				title += " \u00b7 time axis shared with the " + (v.panels.length - 1) + " other rank" +
					(v.panels.length > 2 ? "s" : "") + " of its job";
			head.appendChild(document.createTextNode(title));
			panel.appendChild(head);
			p.canvas = el("canvas");
			p.canvas.setAttribute("aria-label", "timeline of " + p.name);
			panel.appendChild(p.canvas);
			box.appendChild(panel);
			attachInteraction(p);
		});
		drawAll();
		window.addEventListener("resize", drawAll);
	}

	function drawAll() {
		panels.forEach(drawPanel);
	}

	/* Redraws the panels of one axis: zooming one recording leaves the others as they are. */
	function drawView(v) {
		v.panels.forEach(drawPanel);
	}

	/* First index in lane.idx whose call may still be visible at time t (calls sorted by start). */
	function firstVisible(p, lane, t) {
		var lo = 0, hi = lane.idx.length, from = t - lane.maxDur - p.offset;
		while (lo < hi) {
			var mid = (lo + hi) >> 1;
			if (p.calls[lane.idx[mid]][C_T] < from)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}

	function drawPanel(p) {
		var canvas = p.canvas, dpr = window.devicePixelRatio || 1, view = p.view;
		/* the shown span, for whoever inspects the page (the tests) */
		canvas.parentNode.dataset.viewT0 = String(view.t0);
		canvas.parentNode.dataset.viewT1 = String(view.t1);
		var width = canvas.clientWidth || 800;
		var height = PAD_TOP + p.lanes.length * LANE_H + AXIS_H;
		canvas.style.height = height + "px";
		canvas.width = Math.round(width * dpr);
		canvas.height = Math.round(height * dpr);
		var g = canvas.getContext("2d");
		g.setTransform(dpr, 0, 0, dpr, 0, 0);
		g.clearRect(0, 0, width, height);
		var plotW = Math.max(10, width - GUTTER);
		var scale = plotW / (view.t1 - view.t0);
		p.geom = { plotW: plotW, scale: scale, width: width };
		g.font = "11px system-ui, sans-serif";
		g.textBaseline = "middle";

		p.lanes.forEach(function (lane, li) {
			var y = PAD_TOP + li * LANE_H;
			g.fillStyle = li % 2 ? "#ffffff" : "#f3f5f9";
			g.fillRect(0, y, width, LANE_H);
			g.fillStyle = lane.info[0] === "thread" ? "#1d2330" : "#4b5568";
			g.fillText(fitText(g, laneLabel(lane.info), GUTTER - 8), 4, y + LANE_H / 2);
			g.save();
			g.beginPath();
			g.rect(GUTTER, y, plotW, LANE_H);
			g.clip();
			var lastPx = -1, lastCls = -1;
			for (var k = firstVisible(p, lane, view.t0); k < lane.idx.length; k++) {
				var c = p.calls[lane.idx[k]];
				var t = p.offset + c[C_T];
				if (t > view.t1)
					break;
				if (t + c[C_DUR] < view.t0)
					continue;
				var x0 = GUTTER + (t - view.t0) * scale;
				var w = Math.max(c[C_DUR] * scale, 1);
				var cls = classes[c[C_CLS]] || ["?", 0];
				/* Many calls inside one pixel column: draw the column once per class. */
				if (w <= 1 && Math.floor(x0) === lastPx && c[C_CLS] === lastCls)
					continue;
				lastPx = Math.floor(x0);
				lastCls = c[C_CLS];
				g.fillStyle = CLASS_COLORS[cls[0]] || "#888";
				g.fillRect(x0, y + SYNC_STRIP + 1, w, LANE_H - SYNC_STRIP - 3);
				/* Sync points get a dark strip on top, at least 3 px wide, so they stand out
				   at any zoom. */
				if (cls[1] && li === c[C_TLANE]) {
					g.fillStyle = "#5c0a0a";
					g.fillRect(x0 - (w < 3 ? 1 : 0), y, Math.max(w, 3), SYNC_STRIP);
				}
			}
			g.restore();
		});
		drawFocus(g, p, width, scale);
		drawAxis(g, view, PAD_TOP + p.lanes.length * LANE_H, plotW, scale, width);
	}

	/* The calls of the finding shown (focusFinding): outlined on their thread's lane. */
	function drawFocus(g, p, width, scale) {
		if (!p.focus)
			return;
		var view = p.view;
		g.save();
		g.beginPath();
		g.rect(GUTTER, 0, width - GUTTER, PAD_TOP + p.lanes.length * LANE_H);
		g.clip();
		g.strokeStyle = "#1d4ed8";
		g.lineWidth = 2;
		p.focus.forEach(function (c) {
			var x0 = GUTTER + (p.offset + c[C_T] - view.t0) * scale;
			if (x0 > width || x0 + c[C_DUR] * scale < GUTTER)
				return;
			var y = PAD_TOP + c[C_TLANE] * LANE_H;
			g.strokeRect(x0 - 2, y + 0.5, Math.max(c[C_DUR] * scale, 1) + 4, LANE_H - 1);
		});
		g.restore();
	}

	/*
	 * The longest start of text that fits maxW px, with an ellipsis when cut. A binary search on
	 * the length: O(log n) measures, never one per character (a 1 MB thread name froze the
	 * page). Only the first LABEL_CHARS_MAX characters are ever measured: no gutter shows more.
	 */
	var LABEL_CHARS_MAX = 256;
	function fitText(g, text, maxW) {
		if (text.length <= LABEL_CHARS_MAX && g.measureText(text).width <= maxW)
			return text;
		var lo = 1, hi = Math.min(text.length, LABEL_CHARS_MAX);
		while (lo < hi) { /* the first lo characters and the ellipsis fit (or lo is 1) */
			var mid = (lo + hi + 1) >> 1;
			if (g.measureText(text.slice(0, mid) + "\u2026").width <= maxW)
				lo = mid;
			else
				hi = mid - 1;
		}
		/* never half of a surrogate pair */
		if (lo > 1 && /[\ud800-\udbff]/.test(text.charAt(lo - 1)))
			lo--;
		return text.slice(0, lo) + "\u2026";
	}

	/* Ticks at 1, 2 or 5 times a power of ten, about every 100 px. */
	function drawAxis(g, view, y, plotW, scale, width) {
		var span = view.t1 - view.t0;
		var raw = span / Math.max(1, plotW / 100);
		var pow = Math.pow(10, Math.floor(Math.log10(raw)));
		var step = [1, 2, 5, 10].map(function (m) { return m * pow; })
			.filter(function (s) { return s >= raw; })[0];
		g.strokeStyle = "#9aa3b2";
		g.fillStyle = "#5d6678";
		g.beginPath();
		g.moveTo(GUTTER, y + 0.5);
		g.lineTo(width, y + 0.5);
		for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
			var x = Math.round(GUTTER + (t - view.t0) * scale) + 0.5;
			g.moveTo(x, y);
			g.lineTo(x, y + 5);
			if (x < width - 50)
				g.fillText(fmtNs(t), x + 2, y + 13);
		}
		g.stroke();
	}

	/* The call under the mouse: in the lane at y, the one nearest x within 3 px, sync points
	   preferred. */
	function hitTest(p, x, y) {
		var li = Math.floor((y - PAD_TOP) / LANE_H);
		var lane = p.lanes[li];
		if (!lane || x < GUTTER || !p.geom)
			return null;
		var t = p.view.t0 + (x - GUTTER) / p.geom.scale, slack = 3 / p.geom.scale;
		var best = null, bestScore = Infinity;
		for (var k = firstVisible(p, lane, t - slack); k < lane.idx.length; k++) {
			var c = p.calls[lane.idx[k]];
			var s = p.offset + c[C_T];
			if (s > t + slack)
				break;
			var e = s + c[C_DUR];
			if (e < t - slack)
				continue;
			var dist = t < s ? s - t : t > e ? t - e : 0;
			var score = dist - ((classes[c[C_CLS]] || [])[1] ? slack : 0);
			if (score < bestScore) {
				best = c;
				bestScore = score;
			}
		}
		return best;
	}

	function describe(p, c) {
		var cls = classes[c[C_CLS]] || ["?", 0, ""];
		var lines = [
			(p.apis[c[C_API]] || "api #" + c[C_API]) + "   " + cls[0] + (cls[1] ? " (sync point)" : ""),
			cls[2],
			"took " + fmtNs(c[C_DUR]) + ", started at " + fmtNs(p.offset + c[C_T])
		];
		if (c[C_COUNT] > 1)
			lines.push(fmtInt(c[C_COUNT]) + " queries in this polling loop");
		if (c[C_BYTES])
			lines.push(fmtBytes(c[C_BYTES]) + " (" + fmtInt(c[C_BYTES]) + " bytes)");
		var slane = p.lanes[c[C_SLANE]];
		if (slane)
			lines.push(laneLabel(slane.info));
		var tlane = p.lanes[c[C_TLANE]];
		if (tlane)
			lines.push("called by " + laneLabel(tlane.info));
		lines.push("site: " + (c[C_SITE] ? p.sites[c[C_SITE]] || "#" + c[C_SITE] : "(not attributed)"));
		return lines.join("\n");
	}

	function attachInteraction(p) {
		var canvas = p.canvas, drag = null, view = p.view;
		canvas.addEventListener("wheel", function (ev) {
			ev.preventDefault();
			var rect = canvas.getBoundingClientRect();
			var x = ev.clientX - rect.left;
			if (x < GUTTER || !p.geom)
				return;
			var at = view.t0 + (x - GUTTER) / p.geom.scale;
			var factor = Math.pow(1.0015, ev.deltaY * (ev.deltaMode === 1 ? 30 : 1));
			var span = Math.min(view.max - view.min, Math.max(1000, (view.t1 - view.t0) * factor));
			view.t0 = at - (at - view.t0) * span / (view.t1 - view.t0);
			view.t1 = view.t0 + span;
			clampView(view);
			drawView(view);
		}, { passive: false });
		canvas.addEventListener("mousedown", function (ev) {
			drag = { x: ev.clientX, t0: view.t0, t1: view.t1 };
			canvas.classList.add("dragging");
			ev.preventDefault();
		});
		window.addEventListener("mousemove", function (ev) {
			if (drag && p.geom) {
				var dt = (ev.clientX - drag.x) / p.geom.scale;
				view.t0 = drag.t0 - dt;
				view.t1 = drag.t1 - dt;
				clampView(view);
				drawView(view);
			}
		});
		window.addEventListener("mouseup", function () {
			drag = null;
			canvas.classList.remove("dragging");
		});
		canvas.addEventListener("dblclick", function () {
			view.t0 = view.min;
			view.t1 = view.max;
			drawView(view);
		});
		canvas.addEventListener("mousemove", function (ev) {
			var rect = canvas.getBoundingClientRect();
			var c = drag ? null : hitTest(p, ev.clientX - rect.left, ev.clientY - rect.top);
			if (!c) {
				tooltip.hidden = true;
				return;
			}
			tooltip.textContent = describe(p, c);
			tooltip.hidden = false;
			var left = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
			tooltip.style.left = Math.max(0, left) + "px";
			tooltip.style.top = ev.clientY + 16 + "px";
		});
		canvas.addEventListener("mouseleave", function () {
			tooltip.hidden = true;
		});
	}

	function clampView(view) {
		var span = view.t1 - view.t0;
		if (view.t0 < view.min) {
			view.t0 = view.min;
			view.t1 = view.min + span;
		}
		if (view.t1 > view.max) {
			view.t1 = view.max;
			view.t0 = Math.max(view.min, view.max - span);
		}
	}

	/* ------------------------------------------------------------ findings on the timeline */

	/*
	 * Shows finding i on its recording's timeline: the calls from its site (of its class, where
	 * it names one; a finding whose site is no call site: the calls of its class) are outlined,
	 * the view zooms to them, from the first to the last, and the panel is scrolled into sight.
	 * Only that recording's axis moves.
	 */
	function focusFinding(i) {
		var f = (report.findings || [])[i], ti = f ? findingRank(i, f) : -1;
		var p = panels.filter(function (q) { return q.index === ti; })[0];
		if (!p)
			return false;
		var ids = {};
		(p.r.sites || []).forEach(function (s) { if (f.site && s[1] === f.site) ids[s[0]] = true; });
		var ofClass = function (c) { return !f.class || (classes[c[C_CLS]] || [])[0] === f.class; };
		var calls = p.calls.filter(function (c) { return ids[c[C_SITE]] && ofClass(c); });
		if (!calls.length)
			calls = p.calls.filter(function (c) { return ids[c[C_SITE]]; });
		if (!calls.length && f.class)
			calls = p.calls.filter(function (c) { return (classes[c[C_CLS]] || [])[0] === f.class; });
		panels.forEach(function (q) {
			if (q.focus && q !== p) {
				q.focus = null;
				drawPanel(q);
			}
		});
		p.focus = calls;
		var v = p.view;
		if (calls.length) {
			var s = Infinity, e = -Infinity;
			calls.forEach(function (c) {
				s = Math.min(s, p.offset + c[C_T]);
				e = Math.max(e, p.offset + c[C_T] + c[C_DUR]);
			});
			var pad = Math.max((e - s) * 0.25, 1000); /* some context around them */
			v.t0 = s - pad;
			v.t1 = e + pad;
			if (v.t1 - v.t0 > v.max - v.min) {
				v.t0 = v.min;
				v.t1 = v.max;
			}
			clampView(v);
		}
		drawView(v);
		Array.prototype.forEach.call(document.querySelectorAll(".finding.focused"), function (c) {
			c.classList.remove("focused");
		});
		/* the card by its place (no id: the hash names no element, so focusFinding scrolls,
		   not the browser) */
		var card = document.querySelectorAll("#findings .finding")[i];
		if (card) {
			card.classList.add("focused");
			card.hidden = false;
		}
		var panel = p.canvas.parentNode;
		panel.dataset.focusCalls = String(calls.length);
		document.body.dataset.focus = String(i);
		var box = panel.getBoundingClientRect();
		if (box.top < 0 || box.bottom > window.innerHeight) /* in sight already: no jump */
			panel.scrollIntoView({ block: "center" });
		return true;
	}

	function focusFromHash() {
		var m = /^#finding-(\d+)$/.exec(location.hash);
		if (m)
			focusFinding(Number(m[1]));
	}

	/* ------------------------------------------------------------ call sites */

	var SITE_LIMIT = 2000;
	var siteRows = [];
	var siteSort = { key: "blocked", dir: -1 };
	var SITE_COLS = [
		["name", "recording", ""], ["site", "call site", "site"], ["kind", "kind", ""],
		["cls", "class", ""], ["calls", "calls", "num"], ["blocked", "time in calls", "num"]
	];

	function collectSites() {
		var syncClass = {};
		classes.forEach(function (c) { syncClass[c[0]] = !!c[1]; });
		tlRanks.forEach(function (r) {
			var sites = {};
			(r.sites || []).forEach(function (s) { sites[s[0]] = s; });
			(r.site_stats || []).forEach(function (st) {
				var s = sites[st[0]];
				siteRows.push({
					rank: r.rank, name: recordingName(r, reportRankOf(tlRanks.indexOf(r))), site: s ? s[1] || "" : "(not attributed)", kind: s ? s[2] : "-",
					cls: st[1], sync: !!syncClass[st[1]], calls: st[2], blocked: st[3]
				});
			});
		});
	}

	function renderSites() {
		collectSites();
		var table = document.getElementById("sites");
		var filter = document.getElementById("site-filter");
		var syncOnly = document.getElementById("site-sync-only");
		var head = el("tr");
		SITE_COLS.forEach(function (c) {
			var th = el("th", c[2] === "num" ? "num" : "", c[1]);
			th.dataset.key = c[0];
			th.addEventListener("click", function () {
				siteSort.dir = siteSort.key === c[0] ? -siteSort.dir : (c[2] === "num" ? -1 : 1);
				siteSort.key = c[0];
				fillSites(table, filter.value, syncOnly.checked);
			});
			head.appendChild(th);
		});
		table.appendChild(el("thead")).appendChild(head);
		table.appendChild(el("tbody"));
		filter.addEventListener("input", function () { fillSites(table, filter.value, syncOnly.checked); });
		syncOnly.addEventListener("change", function () { fillSites(table, filter.value, syncOnly.checked); });
		fillSites(table, "", syncOnly.checked);
	}

	function fillSites(table, text, syncOnly) {
		var needle = text.trim().toLowerCase();
		var rows = siteRows.filter(function (r) {
			if (syncOnly && !r.sync)
				return false;
			return !needle || [r.site, r.cls, r.kind, r.name, "rank " + rankLabel(r.rank)].join(" ")
				.toLowerCase().indexOf(needle) >= 0;
		});
		var key = siteSort.key, dir = siteSort.dir;
		rows.sort(function (a, b) {
			var x = a[key], y = b[key];
			if (typeof x === "number" || typeof y === "number")
				return dir * ((x || 0) - (y || 0));
			return dir * String(x).localeCompare(String(y));
		});
		Array.prototype.forEach.call(table.querySelectorAll("th"), function (th) {
			th.classList.toggle("sorted-asc", th.dataset.key === key && dir > 0);
			th.classList.toggle("sorted-desc", th.dataset.key === key && dir < 0);
		});
		var body = el("tbody");
		rows.slice(0, SITE_LIMIT).forEach(function (r) {
			var tr = el("tr");
			tr.appendChild(el("td", null, r.name));
			tr.appendChild(el("td", "site mono", r.site));
			tr.appendChild(el("td", null, r.kind));
			tr.appendChild(el("td")).appendChild(classBadge(r.cls));
			tr.appendChild(el("td", "num", fmtInt(r.calls)));
			tr.appendChild(el("td", "num", fmtNs(r.blocked)));
			body.appendChild(tr);
		});
		table.replaceChild(body, table.querySelector("tbody"));
		document.getElementById("site-count").textContent = rows.length > SITE_LIMIT ?
			"showing " + SITE_LIMIT + " of " + rows.length + " rows: filter to narrow" : rows.length + " rows";
	}

	/* ------------------------------------------------------------ notes */

	function renderNotes() {
		var list = document.getElementById("notes");
		var notes = [];
		tlRanks.forEach(function (r) {
			var who = recordingName(r, reportRankOf(tlRanks.indexOf(r))) + " (" + (r.host || "?") + " pid " + (r.pid || "?") + ")";
			if (r.truncated)
				notes.push(who + ": the timeline shows " + fmtInt(r.calls_shown) + " of " + fmtInt(r.calls_total) +
					" calls (sync points first, then the earliest others); the tables count all of them.");
			if (data.report)
				return;
			if (r.dropped_events > 0)
				notes.push(who + ": " + fmtInt(r.dropped_events) + " calls were dropped while recording; counts are lower bounds.");
			if (!r.exit_reason)
				notes.push(who + ": the recording is unfinished (still running or killed); it ends at its last commit.");
		});
		(report.notes || []).forEach(function (n) { notes.push(typeof n === "string" ? n : JSON.stringify(n)); });
		notes.push("Timeline times are host-side: when each call ran on the CPU, not when the GPU ran the work.");
		notes.forEach(function (n) { list.appendChild(el("li", null, n)); });
	}

	renderHeader();
	renderFindings();
	renderRanks();
	renderLegend();
	renderTimelines();
	renderSites();
	renderNotes();
	focusFromHash();
	window.addEventListener("hashchange", focusFromHash);
	document.body.dataset.rendered = "ok";
})();
