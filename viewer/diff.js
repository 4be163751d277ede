/* SPDX-License-Identifier: MIT */
/*
 * viewer/diff.js: draws the page of `syncspy diff --format html` from the JSON that
 * report/diff_html.c embeds in <script id="syncspy-data">: {"before": BEFORE, "after": AFTER,
 * "diff": the diff's JSON (docs/diff.md)}. It shows what the text format prints, with the same
 * figures: per rank the steps before and after, then the findings gone, new and changed (and
 * the same ones, folded), the regressions marked.
 *
 * It keeps the report viewer's rules (viewer/report.js): every string from the data reaches
 * the page through textContent (VIEW-1), nothing is fetched (VIEW-2), and body[data-rendered]
 * is "ok" when it is drawn, body[data-error] set by an uncaught error (VIEW-3).
 */
(function () {
	"use strict";

	window.addEventListener("error", function (ev) {
		document.body.dataset.error = String(ev.message || ev.type);
	});

	var raw = document.getElementById("syncspy-data").textContent;
	var page = raw.trim() ? JSON.parse(raw) : {};
	var diff = page.diff || {};

	/* An element with a class and a text (textContent only: VIEW-1). */
	function node(tag, cls, text) {
		var n = document.createElement(tag);
		if (cls)
			n.className = cls;
		if (text !== undefined && text !== null)
			n.textContent = String(text);
		return n;
	}

	function known(v) {
		return typeof v === "number" && isFinite(v);
	}

	/* The text format's figures: ms with 3 decimals, syncs per step with 2, "-" for none. */
	function ms(ns) {
		return known(ns) ? (ns / 1e6).toFixed(3) : "-";
	}

	function perStep(v) {
		return known(v) ? v.toFixed(2) : "-";
	}

	/* A rank as the text names it: "rank R", else "#N" (its place). */
	function rankName(rank, i) {
		return known(rank) ? "rank " + rank : "#" + (i + 1);
	}

	/* ------------------------------------------------------------ header */

	function renderHeader() {
		var dl = document.getElementById("profiled");
		var ranks = diff.ranks || [];
		function row(label, value) {
			dl.appendChild(node("dt", null, label));
			dl.appendChild(node("dd", label === "before" || label === "after" ? "mono" : null, value));
		}
		row("before", page.before);
		row("after", page.after);
		row("ranks", ranks.filter(function (r) { return r.before; }).length + " before, " +
			ranks.filter(function (r) { return r.after; }).length + " after");
		row("threshold", (known(diff.threshold_percent) ? diff.threshold_percent : "-") + "%");
		var n = known(diff.regressions) ? diff.regressions : 0;
		var verdict = document.getElementById("verdict");
		verdict.textContent = n ? n + (n === 1 ? " regression" : " regressions") : "no regression";
		verdict.className = n ? "regressed" : "";
		document.title = "syncspy diff: " + verdict.textContent;
	}

	/* ------------------------------------------------------------ steps per rank */

	/* The cell of one figure before -> after; lower is better for every figure. */
	function figureCell(before, after, format) {
		var td = node("td", "num", format(before) + " \u2192 " + format(after));
		if (known(before) && known(after) && format(before) !== format(after))
			td.className += after < before ? " better" : " worse";
		return td;
	}

	function side(r, key) {
		return r && known(r[key]) ? r[key] : null;
	}

	function renderSteps() {
		var table = document.getElementById("steps");
		var head = node("tr");
		["rank", "steady steps", "syncs/step", "blocked ms/step", "GPU idle ms/step", ""].forEach(function (h, i) {
			head.appendChild(node("th", i >= 1 && i <= 4 ? "num" : null, h));
		});
		table.appendChild(head);
		(diff.ranks || []).forEach(function (r, i) {
			var tr = node("tr");
			tr.dataset.rank = known(r.rank) ? String(r.rank) : "";
			tr.appendChild(node("td", null, rankName(r.rank, i)));
			var steps = function (v) { return known(v) && v > 0 ? String(v) : "-"; };
			var sb = r.before, sa = r.after;
			var td = node("td", "num", steps(side(sb, "steady_steps")) + " \u2192 " + steps(side(sa, "steady_steps")));
			tr.appendChild(td);
			tr.appendChild(figureCell(side(sb, "sync_points_per_step"), side(sa, "sync_points_per_step"), perStep));
			tr.appendChild(figureCell(side(sb, "blocked_ns_per_step"), side(sa, "blocked_ns_per_step"), ms));
			tr.appendChild(figureCell(side(sb, "gpu_idle_ns_per_step"), side(sa, "gpu_idle_ns_per_step"), ms));
			var mark = node("td");
			if (r.regression)
				mark.appendChild(node("span", "regression", "REGRESSION"));
			tr.appendChild(mark);
			table.appendChild(tr);
		});
	}

	/* ------------------------------------------------------------ findings */

	function numbers(f) {
		return "count " + (known(f.count) ? f.count : "-") + ", blocked " + ms(f.blocked_ns) +
			" ms, cost/step " + ms(f.cost_per_step_ns) + " ms";
	}

	function changes(b, a) {
		var text = "count " + b.count + " \u2192 " + a.count + ", blocked " + ms(b.blocked_ns) +
			" \u2192 " + ms(a.blocked_ns) + " ms, cost/step " + ms(b.cost_per_step_ns) + " \u2192 " +
			ms(a.cost_per_step_ns) + " ms";
		if (b.severity !== a.severity)
			text += ", severity " + b.severity + " \u2192 " + a.severity;
		return text;
	}

	function card(item) {
		var f = item.after || item.before || {};
		var sev = String(f.severity || "info").toLowerCase().replace(/[^a-z]/g, "");
		var c = node("div", "finding sev-" + sev + " " + String(item.status).replace(/[^a-z]/g, ""));
		c.dataset.rule = String(item.rule || "");
		c.dataset.status = String(item.status || "");
		var title = node("div", "title");
		title.appendChild(node("span", "status", item.status));
		title.appendChild(node("span", "sev", sev));
		title.appendChild(document.createTextNode(String(item.rule || "") +
			(known(item.rank) ? " \u00b7 rank " + item.rank : "")));
		if (item.regression)
			title.appendChild(node("span", "regression", "REGRESSION"));
		c.appendChild(title);
		c.appendChild(node("div", "site mono", item.site));
		var facts = item.status === "changed" && item.before && item.after
			? changes(item.before, item.after) : numbers(f);
		c.appendChild(node("div", "facts", facts));
		return c;
	}

	function renderFindings() {
		var groups = {gone: [], "new": [], changed: [], same: []};
		(diff.findings || []).forEach(function (item) {
			if (groups[item.status])
				groups[item.status].push(item);
		});
		var counts = document.getElementById("counts");
		var summary = diff.summary || {};
		["gone", "new", "changed", "same"].forEach(function (status) {
			var n = known(summary[status]) ? summary[status] : groups[status].length;
			var badge = node("span", "status", n + " " + status);
			badge.dataset.status = status;
			counts.appendChild(badge);
			var box = document.getElementById(status);
			if (!groups[status].length)
				box.appendChild(node("p", "note", "none"));
			groups[status].forEach(function (item) { box.appendChild(card(item)); });
		});
	}

	renderHeader();
	renderSteps();
	renderFindings();
	document.body.dataset.rendered = "ok";
})();
