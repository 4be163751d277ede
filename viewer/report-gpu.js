/* SPDX-License-Identifier: MIT */
/* viewer/report-gpu.js: the timeline's GPU lanes (CUPTI data), spliced into report.js's
 * function by report/out_html.c only when the page's data has GPU lanes (HTML-4): a page without
 * them carries report.js unchanged. */
	/* ------------------------------------------------------------ GPU lanes (CUPTI) */

	/* viewer/report-gpu.js: only for a page whose data has GPU lanes (HTML-4), report/out_html.c
	   writes this code into viewer/report.js's function just before the render calls, where it wraps
	   the timeline's functions by reassigning them. A page without GPU data is thus byte for
	   byte what it was before GPU lanes existed (report.js inlined verbatim). Being inside an
	   HTML comment in the template, this code must not contain the comment's end marker.
	   A rank's GPU item: [start_ns, dur_ns, kind, GPU lane, host thread lane or -1, launch_ns,
	   bytes, name, src_kind, dst_kind, copy_kind] (docs/viewer.md). */
	var GPU_KINDS = ["kernel", "memcpy", "memset"];
	var GPU_COLORS = ["#3d3b8e", "#e0a526", "#30a6c9"];
	var GPU_LAUNCH_WINDOW = 1e6; /* a launch is tied to a host call at most 1 ms before it */
	var COPY_KINDS = { 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
		8: "DtoD", 9: "HtoH", 10: "PtoP" };
	var host = {
		preparePanel: preparePanel, laneLabel: laneLabel, drawPanel: drawPanel, hitTest: hitTest,
		describe: describe, attachInteraction: attachInteraction, renderLegend: renderLegend,
		renderTimelines: renderTimelines, renderNotes: renderNotes, panelSpan: panelSpan
	};

	/* fmtNs of a value rounded to 3 digits: fmtNs alone writes 999,500 ns as "1.00e+3 us". */
	function fmtNs3(ns) {
		return fmtNs(isNum(ns) ? Number(ns.toPrecision(3)) : ns);
	}

	/* The rank's GPU lanes go under its host lanes (empty for the host drawing: it paints their
	   background and label); its items are indexed per lane. */
	preparePanel = function (r) {
		var p = host.preparePanel(r), hostLanes = p.lanes.length, strings = {}, demangled = {};
		(r.gpu_strings || []).forEach(function (s) { strings[s[0]] = s[1]; });
		/* kernel names demangled by report/out_html.c (libstdc++'s demangler), the symbol kept */
		(r.gpu_demangled || []).forEach(function (s) { demangled[s[0]] = s[1]; });
		(r.gpu_lanes || []).forEach(function (l) {
			p.lanes.push({ info: ["gpu", l[0], l[1], hostLanes + l[2]], idx: [], gidx: [], maxDur: 0, gpu: true });
		});
		var items = (r.gpu || []).map(function (a) {
			return {
				gpuItem: true, t: a[0], dur: a[1], kind: a[2], lane: hostLanes + a[3],
				tlane: a[4] === undefined ? -1 : a[4], launch: a[5] || 0, bytes: a[6] || 0,
				name: demangled[a[7]] || strings[a[7]], symbol: demangled[a[7]] ? strings[a[7]] : undefined,
				src: strings[a[8]], dst: strings[a[9]], copyKind: a[10] || 0
			};
		});
		items.sort(function (a, b) { return a.t - b.t; });
		var start = Infinity, end = -Infinity;
		items.forEach(function (it, i) {
			var lane = p.lanes[it.lane];
			if (!lane || !lane.gpu)
				return;
			lane.gidx.push(i);
			lane.maxDur = Math.max(lane.maxDur, it.dur);
			start = Math.min(start, it.t);
			end = Math.max(end, it.t + it.dur);
		});
		p.gpu = { items: items, start: start, end: end, firstLane: hostLanes };
		p.hover = null;
		return p;
	};

	laneLabel = function (info) {
		if (info[0] === "gpu")
			return "GPU " + info[1] + " stream " + info[2];
		return host.laneLabel(info);
	};

	/* The recording's axis covers its GPU work too. */
	panelSpan = function (p) {
		var span = host.panelSpan(p);
		if (p.gpu.end >= p.gpu.start)
			return [Math.min(span[0], p.gpu.start), Math.max(span[1], p.gpu.end)];
		return span;
	};

	/* The panel titles count the GPU work. */
	renderTimelines = function () {
		host.renderTimelines();
		panels.forEach(function (p) {
			var r = p.r, title = p.canvas.parentNode.querySelector("h3");
			if (title && r.gpu)
				title.textContent += " \u00b7 " + fmtInt(r.gpu_shown) + " GPU items" +
					(r.gpu_truncated ? " (first " + fmtInt(r.gpu_shown) + " of " + fmtInt(r.gpu_total) + ": see notes)" : "");
		});
	};

	renderLegend = function () {
		host.renderLegend();
		var box = document.getElementById("legend");
		GPU_KINDS.forEach(function (k, i) {
			var item = el("span");
			item.title = "GPU " + k + ": when the GPU ran it (CUPTI)";
			var sw = el("span", "swatch");
			sw.style.background = GPU_COLORS[i];
			item.appendChild(sw);
			item.appendChild(document.createTextNode("GPU " + k));
			box.appendChild(item);
		});
	};

	renderNotes = function () {
		host.renderNotes();
		var list = document.getElementById("notes");
		tlRanks.forEach(function (r) {
			if (r.gpu_truncated)
				list.appendChild(el("li", null, recordingName(r) + " (" + (r.host || "?") + " pid " +
					(r.pid || "?") + "): the GPU lanes show the first " + fmtInt(r.gpu_shown) + " of " +
					fmtInt(r.gpu_total) + " kernels, copies and memsets."));
		});
		list.appendChild(el("li", null, "GPU lanes (recorded through CUPTI) are the exception: they show when " +
			"the GPU ran each kernel, copy and memset, on the same clock as the host calls. Hover a GPU item " +
			"to see the host call that launched it."));
	};

	/* First index in lane.gidx whose item may still be visible at time t. */
	function gpuFirstVisible(p, lane, t) {
		var lo = 0, hi = lane.gidx.length, from = t - lane.maxDur - p.offset;
		while (lo < hi) {
			var mid = (lo + hi) >> 1;
			if (p.gpu.items[lane.gidx[mid]].t < from)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}

	drawPanel = function (p) {
		host.drawPanel(p);
		var g = p.canvas.getContext("2d"), geom = p.geom;
		for (var li = p.gpu.firstLane; li < p.lanes.length; li++)
			drawGpuLane(g, p, p.lanes[li], li, geom.width, geom.plotW, geom.scale);
		drawGpuLink(g, p, geom.width, geom.scale);
	};

	function drawGpuLane(g, p, lane, li, width, plotW, scale) {
		var y = PAD_TOP + li * LANE_H, view = p.view;
		g.fillStyle = li % 2 ? "#f8f7fd" : "#eeedf8";
		g.fillRect(0, y, width, LANE_H);
		if (li === p.gpu.firstLane) { /* a rule between the host lanes and the GPU lanes */
			g.fillStyle = "#8a86c4";
			g.fillRect(0, y, width, 1);
		}
		g.fillStyle = "#2e2b6e";
		g.fillText(fitText(g, laneLabel(lane.info), GUTTER - 8), 4, y + LANE_H / 2);
		g.save();
		g.beginPath();
		g.rect(GUTTER, y, plotW, LANE_H);
		g.clip();
		var lastPx = -1, lastKind = -1;
		for (var k = gpuFirstVisible(p, lane, view.t0); k < lane.gidx.length; k++) {
			var it = p.gpu.items[lane.gidx[k]];
			var t = p.offset + it.t;
			if (t > view.t1)
				break;
			if (t + it.dur < view.t0)
				continue;
			var x0 = GUTTER + (t - view.t0) * scale;
			var w = Math.max(it.dur * scale, 1);
			/* Many items inside one pixel column: draw the column once per kind. */
			if (w <= 1 && Math.floor(x0) === lastPx && it.kind === lastKind)
				continue;
			lastPx = Math.floor(x0);
			lastKind = it.kind;
			g.fillStyle = GPU_COLORS[it.kind] || "#888";
			g.fillRect(x0, y + 3, w, LANE_H - 6);
			/* Boxes wider than a few pixels get a light left edge, so back-to-back work stays apart. */
			if (w > 4) {
				g.fillStyle = "rgba(255, 255, 255, 0.7)";
				g.fillRect(x0, y + 3, 1, LANE_H - 6);
			}
		}
		g.restore();
	}

	/* The host call that made a GPU item: on its launch thread's lane, the call that started
	   last at or before the launch, at most GPU_LAUNCH_WINDOW before it (docs/cupti.md). */
	function launchCall(p, it) {
		var lane = p.lanes[it.tlane];
		if (it.tlane < 0 || !lane || lane.gpu)
			return null;
		var best = null;
		for (var k = firstVisible(p, lane, p.offset + it.launch); k < lane.idx.length; k++) {
			var c = p.calls[lane.idx[k]];
			if (c[C_T] > it.launch)
				break;
			if (c[C_T] >= it.launch - GPU_LAUNCH_WINDOW && c[C_TLANE] === it.tlane)
				best = c;
		}
		return best;
	}

	/* The hovered item's outline, its host call's outline and a thin line from the launch (the
	   CUPTI API record's start, a dot on the thread's lane) to the item. */
	function drawGpuLink(g, p, width, scale) {
		var it = p.hover, view = p.view;
		if (!it)
			return;
		g.save();
		g.beginPath();
		g.rect(GUTTER, 0, width - GUTTER, PAD_TOP + p.lanes.length * LANE_H);
		g.clip();
		var gx = GUTTER + (p.offset + it.t - view.t0) * scale;
		var gy = PAD_TOP + it.lane * LANE_H;
		g.strokeStyle = "#111827";
		g.fillStyle = "#111827";
		g.lineWidth = 1.5;
		g.strokeRect(gx - 0.5, gy + 2.5, Math.max(it.dur * scale, 1) + 1, LANE_H - 5);
		if (it.tlane >= 0 && p.lanes[it.tlane]) {
			var ty = PAD_TOP + it.tlane * LANE_H;
			var lx = GUTTER + (p.offset + it.launch - view.t0) * scale;
			var call = launchCall(p, it);
			if (call) {
				var cx = GUTTER + (p.offset + call[C_T] - view.t0) * scale;
				g.strokeRect(cx - 0.5, ty + 0.5, Math.max(call[C_DUR] * scale, 1) + 1, LANE_H - 1);
			}
			g.lineWidth = 1;
			g.beginPath();
			g.moveTo(lx, ty + LANE_H / 2);
			g.lineTo(gx, gy + 2);
			g.stroke();
			g.beginPath();
			g.arc(lx, ty + LANE_H / 2, 2.5, 0, 2 * Math.PI);
			g.fill();
		}
		g.restore();
	}

	/* In a GPU lane: the item nearest x within 3 px. */
	hitTest = function (p, x, y) {
		var lane = p.lanes[Math.floor((y - PAD_TOP) / LANE_H)];
		if (!lane || !lane.gpu)
			return host.hitTest(p, x, y);
		if (x < GUTTER || !p.geom)
			return null;
		var t = p.view.t0 + (x - GUTTER) / p.geom.scale, slack = 3 / p.geom.scale;
		var best = null, bestDist = Infinity;
		for (var k = gpuFirstVisible(p, lane, t - slack); k < lane.gidx.length; k++) {
			var it = p.gpu.items[lane.gidx[k]];
			var s = p.offset + it.t;
			if (s > t + slack)
				break;
			var e = s + it.dur;
			if (e < t - slack)
				continue;
			var dist = t < s ? s - t : t > e ? t - e : 0;
			if (dist < bestDist) {
				best = it;
				bestDist = dist;
			}
		}
		return best;
	};

	describe = function (p, it) {
		if (!it.gpuItem)
			return host.describe(p, it);
		var lines = [];
		if (it.kind === 0) {
			lines.push("kernel   " + (it.name || "(no name)"));
			if (it.symbol)
				lines.push("symbol: " + it.symbol);
		}
		else if (it.kind === 1)
			lines.push("memcpy " + (COPY_KINDS[it.copyKind] || "kind " + it.copyKind) + "   " +
				fmtBytes(it.bytes) + " (" + fmtInt(it.bytes) + " bytes)",
				"memory: " + (it.src || "?") + " -> " + (it.dst || "?"));
		else
			lines.push((GPU_KINDS[it.kind] || "?") + "   " + fmtBytes(it.bytes) + " (" + fmtInt(it.bytes) + " bytes)");
		lines.push("ran " + fmtNs3(it.dur) + " on the GPU, started at " + fmtNs3(p.offset + it.t));
		if (p.lanes[it.lane])
			lines.push(laneLabel(p.lanes[it.lane].info));
		var tlane = it.tlane >= 0 ? p.lanes[it.tlane] : null;
		if (tlane) {
			var call = launchCall(p, it);
			lines.push("launched " + (call ? "by " + (p.apis[call[C_API]] || "api #" + call[C_API]) + " " : "") +
				"on " + laneLabel(tlane.info) + " at " + fmtNs3(p.offset + it.launch) + ", " +
				fmtNs3(it.t - it.launch) + " before it started");
		} else {
			lines.push("launch not known (no CUPTI API record on a thread that made calls)");
		}
		return lines.join("\n");
	};

	/* Hovering a GPU item redraws its panel with the item's launch line; leaving it, without. */
	attachInteraction = function (p) {
		host.attachInteraction(p);
		function hover(it) {
			if (it === p.hover)
				return;
			p.hover = it;
			drawPanel(p);
		}
		p.canvas.addEventListener("mousemove", function (ev) {
			var rect = p.canvas.getBoundingClientRect();
			var c = ev.buttons ? null : hitTest(p, ev.clientX - rect.left, ev.clientY - rect.top);
			hover(c && c.gpuItem ? c : null);
		});
		p.canvas.addEventListener("mouseleave", function () { hover(null); });
	};

