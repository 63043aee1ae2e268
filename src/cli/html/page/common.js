/* common.js: what the pages of leek's HTML output share (report.js draws the report's, diff.js the
 * diff's): the data that page.c wrote into the leek-data script element, numbers written as
 * `leek report` prints them, sortable tables, the summary of a side's processes, and the flame
 * graph on d3-flame-graph with its tooltip, search and zoom. It defines one global, leekPage; the
 * page's own script uses it.
 *
 * The flame graph's data is the pruned tree of src/cli/html/flame.c, its nodes parents first:
 * [parent, function, file, module, flags (1 inlined, 2 other), dropped, ...the page's own
 * columns], names indexed into its strings.
 *
 * Never: put a string from the data into the page as markup (innerHTML, d3's .html()): every
 * name in it comes from a profile and is untrusted; textContent, .text() and setAttribute only.
 */
'use strict';
const leekPage = (function () {
	const data = JSON.parse(document.getElementById('leek-data').textContent);
	const $ = (id) => document.getElementById(id);

	/* Numbers as `leek report` prints them (out-format.c): binary units, 3 significant digits. */
	const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
	function unitOf(v) {
		let u = 0, s = 1;
		while (Math.abs(v) / s >= 1024 && u + 1 < UNITS.length) {
			s *= 1024;
			u++;
		}
		const x = Math.abs(v) / s;
		return { u, s, dec: u === 0 ? 0 : x < 10 ? 2 : x < 100 ? 1 : 0 };
	}
	function fmtBytes(v) {
		if (v === null || v === undefined) return '-';
		const { u, s, dec } = unitOf(v);
		return (v / s).toFixed(dec) + ' ' + UNITS[u];
	}
	/* An estimate is [value, lo, hi, samples, too_few]. */
	function fmtEst(e) {
		return e[3] ? (e[4] ? '~' : '') + fmtBytes(e[0]) : '0 B';
	}
	function fmtInterval(e) {
		if (!e[3]) return '-';
		if (e[1] === e[2]) return 'exact';
		const { u, s, dec } = unitOf(e[2]);
		return '[' + (e[1] / s).toFixed(dec) + ', ' + (e[2] / s).toFixed(dec) + '] ' + UNITS[u];
	}
	function fmtEstFull(e) {
		if (!e[3]) return '0 B, no sample';
		return fmtEst(e) + ' ' + fmtInterval(e) + ', ' + e[3] + ' sample' + (e[3] === 1 ? '' : 's');
	}
	/* A change, signed, as `leek diff` prints it: "+1.20 MiB", "0 B". */
	function fmtChange(v) {
		if (v === null || v === undefined) return '-';
		const { u, s, dec } = unitOf(v);
		if (Math.round(v / s * 100) === 0) return '0 B';
		return (v > 0 ? '+' : '') + (v / s).toFixed(dec) + ' ' + UNITS[u];
	}
	/* A change's interval [lo, hi]: "[+0.90, +1.50] MiB", or "exact". */
	function fmtChangeInterval(lo, hi) {
		if (lo === null || hi === null) return '-';
		if (lo === hi) return 'exact';
		const { u, s, dec } = unitOf(Math.max(Math.abs(lo), Math.abs(hi)));
		const f = (v) => (v > 0 ? '+' : '') + (v / s).toFixed(dec);
		return '[' + f(lo) + ', ' + f(hi) + '] ' + UNITS[u];
	}
	function fmtCount(v) {
		if (v === null) return '-';
		if (v < 9999.5) return v.toFixed(0);
		if (v < 999950) return (v / 1e3).toFixed(1) + 'k';
		if (v < 999950000) return (v / 1e6).toFixed(1) + 'M';
		return (v / 1e9).toFixed(1) + 'G';
	}
	function fmtTime(s) {
		if (s === null || s === undefined) return '-';
		const a = Math.abs(s);
		if (a < 1e-3) return (s * 1e6).toFixed(0) + ' us';
		if (a < 1) return (s * 1e3).toFixed(0) + ' ms';
		if (a < 600) return s.toFixed(2) + ' s';
		return (s / 60).toFixed(1) + ' min';
	}
	function fmtPct(x) {
		return (100 * x).toFixed(1) + '%';
	}
	function basename(p) {
		return p ? p.slice(p.lastIndexOf('/') + 1) : '';
	}
	function el(tag, text, cls) {
		const e = document.createElement(tag);
		if (text !== undefined && text !== null) e.textContent = text;
		if (cls) e.className = cls;
		return e;
	}
	/* The options of select sel, one per entry of choices ({key: {label}}), value chosen;
	 * onChange(key) when another is. */
	function fillSelect(sel, choices, value, onChange) {
		for (const [k, c] of Object.entries(choices)) {
			const o = el('option', c.label);
			o.value = k;
			sel.append(o);
		}
		sel.value = value;
		sel.addEventListener('change', () => onChange(sel.value));
	}
	/* A table of [key, value] rows into table (a table.kv). */
	function fillRows(table, rows) {
		for (const [k, v] of rows) {
			const tr = el('tr');
			tr.append(el('td', k), el('td', v));
			table.append(tr);
		}
	}

	/* ---- a side's processes and totals (page.c: "processes", "totals") ---- */
	function periodText(t) {
		return t.periods_differ ? 'several periods'
			: t.period <= 1 ? 'exact (period 1: every allocation)'
			: 'period ' + fmtBytes(t.period);
	}
	/* The summary's rows for processes procs with totals t (merged: several). */
	function summaryRows(procs, t, merged) {
		const rows = [], p0 = procs[0];
		if (merged) {
			for (const p of procs)
				rows.push(['process', 'pid ' + p.pid + '  ' + basename(p.exe) + '  ' + p.path]);
		} else {
			rows.push(['process', p0.exe + ', pid ' + p0.pid + ' (ppid ' + p0.ppid + ')' +
				(p0.forked ? ', forked' : '') +
				(p0.continued ? ', continued after its file was cut' : '')]);
			rows.push(['command', p0.cmdline.join(' ') + (p0.cmdline_cut ? ' [cut]' : '')]);
		}
		rows.push(['duration', fmtTime(t.duration_s) + ', ' + periodText(t) + ', ' + t.samples +
			' samples, ' + t.frees + ' frees']);
		rows.push(['allocated', fmtEstFull(t.alloc_bytes) + '; ' + fmtCount(t.alloc_objects) +
			' objects']);
		rows.push([merged ? 'peak (sum)' : 'peak', fmtEstFull(t.peak_bytes) +
			(t.peak_s !== null ? '; at ' + fmtTime(t.peak_s) : '')]);
		rows.push(['live at end', fmtEstFull(t.live_bytes) + '; ' + fmtCount(t.live_objects) +
			' objects']);
		rows.push(['max RSS', fmtBytes(t.max_rss) + (merged ? ' (sum)' : '')]);
		rows.push(['losses', t.losses.length
			? t.losses.map((l) => l[0] + '=' + l[1]).join(' ') : 'none']);
		return rows;
	}
	/* The warnings a side's totals call for, as list items into ul. */
	function totalsWarnings(ul, t, prefix) {
		if (t.frees_unknown)
			ul.append(el('li', prefix + t.frees_unknown + ' frees of blocks that were not live'));
		if (!t.trailer)
			ul.append(el('li', prefix + 'no trailer: the process crashed, was killed or ' +
				'exec\'d; "end" is its last complete record'));
	}

	/* ---- tables ---- */
	function siteCell(s) {
		const td = el('td', null, 'site');
		td.append(el('span', s.function, 'mono'));
		const where = (s.file ? basename(s.file) + (s.line ? ':' + s.line : '') : '') +
			(s.module ? ' [' + basename(s.module) + ']' : '');
		if (where) td.append(el('small', where));
		td.setAttribute('title', (s.file || '') + (s.line ? ':' + s.line : '') +
			(s.module ? ' [' + s.module + ']' : ''));
		return td;
	}
	function estCells(e) {
		return [el('td', fmtEst(e), e[4] ? 'few' : ''), el('td', fmtInterval(e))];
	}
	/* cols: [header, sort key of a row, cells of a row, class, columns spanned]; a click on a
	 * header sorts by it, again the other way. */
	function sortableTable(table, rows, cols, initial) {
		const head = el('tr');
		let by = initial, desc = false;
		const draw = () => {
			const k = cols[by][1];
			const sorted = rows.slice().sort((a, b) => {
				const x = k(a), y = k(b);
				const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
				return desc ? -c : c;
			});
			const body = table.tBodies[0];
			body.replaceChildren();
			for (const r of sorted) {
				const tr = el('tr');
				for (const c of cols) tr.append(...c[2](r));
				body.append(tr);
			}
			head.querySelectorAll('th').forEach((th, i) => {
				th.className = (cols[i][3] || '') + (i === by ? desc ? ' sorted-desc'
					: ' sorted-asc' : '');
			});
		};
		cols.forEach((c, i) => {
			const th = el('th', c[0], c[3]);
			th.colSpan = c[4] || 1;
			th.addEventListener('click', () => {
				desc = by === i ? !desc : typeof c[1](rows[0] || {}) !== 'string' && i !== 0;
				by = i;
				draw();
			});
			head.append(th);
		});
		table.tHead.append(head);
		draw();
	}

	/* ---- the flame graph ---- */
	const fl = data.flame;
	const nodes = fl.nodes;
	const str = (i) => (i >= 0 ? fl.strings[i] : null);
	function nodeName(i, rootName) {
		const n = nodes[i];
		if (n[0] < 0) return rootName;
		if (n[4] & 2) return '(' + n[5] + ' smaller frame' + (n[5] === 1 ? '' : 's') + ')';
		return str(n[1]);
	}
	/* The tooltip's first lines for node i: its name and where it is. */
	function nodeTitle(tip, i, name) {
		const n = nodes[i];
		tip.append(el('div', name, 'fn'));
		const where = [];
		if (str(n[2])) where.push(str(n[2]));
		if (str(n[3])) where.push('[' + str(n[3]) + ']');
		if (n[4] & 1) where.push('(inlined)');
		if (n[4] & 2) where.push('frames below ' + fmtPct(fl.min_share) +
			' of every total, summed');
		if (where.length) tip.append(el('div', where.join(' '), 'where'));
	}
	/* The frames the tree holds and what was left out, for the note under a graph. */
	function flameNote(what) {
		return fl.stacks + ' stacks, ' + fl.nodes_before + ' frames merged by function under' +
			' their callers, from the outermost frame down to the allocation site (allocator' +
			' frames and the wrappers the report skips left out); ' + nodes.length +
			' shown: those that hold at least ' + fmtPct(fl.min_share) + ' of ' + what +
			', at most ' + fl.max_nodes + ', and for the rest one "(N smaller frames)" under' +
			' their caller. Click a frame to zoom, search to highlight.';
	}

	/* A flame graph in element #flame-graph, redrawn by draw() from the page's choices:
	 *   values()         every node's width (a Float64Array, nodes' order; children after
	 *                    parents, each at least the sum of its children)
	 *   rootName         the root's name
	 *   label(v)         a value as text
	 *   tooltip(tip, i, d)  fills the tooltip element for node i (d3's node d)
	 *   color(d)         a fill for node d, or undefined for d3-flame-graph's own
	 *   onDraw(tree)     after each draw
	 * Wires #search, #reset-zoom and #flame-details. */
	function flameGraph(o) {
		const tip = $('tooltip');
		/* d3-flame-graph takes a tooltip as a function (called once with the graph's svg)
		 * with show(event, d) and hide(); its own would show the names as markup. */
		const tooltip = Object.assign(() => {}, {
			show(event, d) {
				tip.replaceChildren();
				o.tooltip(tip, d.data.i, d);
				tip.hidden = false;
				const x = Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 8);
				const y = event.clientY + 16 + tip.offsetHeight > window.innerHeight
					? event.clientY - tip.offsetHeight - 8 : event.clientY + 16;
				tip.style.left = Math.max(0, x) + 'px';
				tip.style.top = Math.max(0, y) + 'px';
			},
			hide() {
				tip.hidden = true;
			},
		});
		function buildTree() {
			const v = o.values();
			const objs = new Array(nodes.length);
			for (let i = 0; i < nodes.length; i++) {
				if (!(v[i] > 0) && i > 0) continue;
				const x = { name: nodeName(i, o.rootName), value: v[i], i, children: [] };
				if (nodes[i][4] & 1) x.libtype = 'inlined';
				objs[i] = x;
				if (i > 0 && objs[nodes[i][0]]) objs[nodes[i][0]].children.push(x);
			}
			return objs[0];
		}
		let fg = null;
		function draw() {
			const tree = buildTree();
			if (fg) {
				fg.update(tree);
			} else {
				const width = Math.max(400, $('flame-graph').clientWidth);
				fg = flamegraph.default()
					.width(width)
					.cellHeight(18)
					.transitionDuration(250)
					.minFrameSize(1)
					.sort(true)
					.tooltip(tooltip)
					.setColorHue('warm')
					.setSearchMatch((d, term) => !!term &&
						d.data.name.toLowerCase().includes(term.toLowerCase()))
					.setLabelHandler((d) => d.data.name + ': ' + o.label(d.value))
					.setSearchHandler((results, sum, total) => {
						$('flame-details').textContent = results.length
							? results.length + ' frame' +
							  (results.length === 1 ? '' : 's') + ' match: ' +
							  o.label(sum) + ', ' +
							  fmtPct(total > 0 ? sum / total : 0) + ' of the graph'
							: 'no frame matches';
					})
					.setDetailsElement($('flame-details'));
				if (o.color)
					fg.setColorMapper((d, original) => (d.highlight ? original
						: o.color(d) || original));
				d3.select('#flame-graph').datum(tree).call(fg);
			}
			const term = $('search').value;
			if (term) fg.search(term);
			if (o.onDraw) o.onDraw(tree);
		}
		function search(term) {
			$('search').value = term;
			if (term) fg.search(term);
			else {
				fg.clear();
				$('flame-details').textContent = '';
			}
		}
		$('search').addEventListener('input', () => search($('search').value));
		$('reset-zoom').addEventListener('click', () => fg.resetZoom());
		/* The graph follows the window's width (the tables do by themselves). */
		let resizing = null;
		window.addEventListener('resize', () => {
			clearTimeout(resizing);
			resizing = setTimeout(() => {
				const w = Math.max(400, $('flame-graph').clientWidth);
				if (fg && w !== fg.width()) fg.width(w).update();
				if (o.onResize) o.onResize();
			}, 150);
		});
		return {
			draw,
			search,
			/* The root's value now, as drawn. */
			rootValue() {
				const root = d3.select('#flame-graph g').datum();
				return root ? root.value : null;
			},
		};
	}

	return Object.freeze({
		data, $, el, fillRows, fillSelect, str, nodes, fl,
		fmtBytes, fmtEst, fmtInterval, fmtEstFull, fmtChange, fmtChangeInterval, fmtCount,
		fmtTime, fmtPct, basename, unitOf, UNITS,
		summaryRows, totalsWarnings, siteCell, estCells, sortableTable,
		nodeName, nodeTitle, flameNote, flameGraph,
	});
})();
