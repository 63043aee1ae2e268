/* page.js: draws leek's HTML report from the JSON that out-html.c writes into
 * the leek-data script element (its keys: docs/design.md, "The HTML report"). The drawing is the
 * libraries': uPlot for the chart over time, d3-flame-graph for the flame graphs; this file
 * turns the data into their inputs, fills the tables and wires the controls.
 *
 * The flame graph of a moment is built here from the nodes' series: each node's live bytes at
 * the end of bucket b are its own series[b] plus its children's, summed from the leaves up
 * (children come after their parents in the data).
 *
 * window.leek is the page's small API (showMoment, showMetric, search, state), which the tests
 * drive as a person would through the controls.
 *
 * Never: put a string from the data into the page as markup (innerHTML, d3's .html()): every
 * name in it comes from a profile and is untrusted; textContent, .text() and setAttribute only.
 */
'use strict';
(function () {
	const data = JSON.parse(document.getElementById('leek-data').textContent);
	const $ = (id) => document.getElementById(id);
	const started = performance.now();

	/* Numbers as `leek report` prints them (out-text.c): binary units, 3 significant digits. */
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
	/* A tick of the time axis: the unit and decimals that tell ticks incr seconds apart. */
	function fmtTick(s, incr) {
		const [unit, name] = incr < 1e-3 ? [1e-6, 'us'] : incr < 1 ? [1e-3, 'ms']
			: incr < 600 ? [1, 's'] : [60, 'min'];
		const dec = Math.max(0, Math.min(6, Math.ceil(-Math.log10(incr / unit) - 1e-9)));
		return (s / unit).toFixed(dec) + ' ' + name;
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

	/* ---- summary ---- */
	const procs = data.processes;
	const t = data.totals;
	function fillSummary() {
		const p0 = procs[0];
		const title = data.merged ? 'merged: ' + procs.length + ' processes'
			: basename(p0.exe) + ', pid ' + p0.pid;
		document.title = 'leek: ' + title;
		$('title').textContent = 'leek: ' + title;
		$('subtitle').textContent = data.merged ? procs.map((p) => p.path).join('  ') : p0.path;
		const rows = [];
		if (data.merged) {
			for (const p of procs)
				rows.push(['process', 'pid ' + p.pid + '  ' + basename(p.exe) + '  ' + p.path]);
		} else {
			rows.push(['process', p0.exe + ', pid ' + p0.pid + ' (ppid ' + p0.ppid + ')' +
				(p0.forked ? ', forked' : '') +
				(p0.continued ? ', continued after its file was cut' : '')]);
			rows.push(['command', p0.cmdline.join(' ') + (p0.cmdline_cut ? ' [cut]' : '')]);
		}
		rows.push(['duration', fmtTime(t.duration_s) + ', ' +
			(t.periods_differ ? 'several periods'
				: t.period <= 1 ? 'exact (period 1: every allocation)'
				: 'period ' + fmtBytes(t.period)) +
			', ' + t.samples + ' samples, ' + t.frees + ' frees']);
		rows.push(['allocated', fmtEstFull(t.alloc_bytes) + '; ' + fmtCount(t.alloc_objects) +
			' objects']);
		rows.push([data.merged ? 'peak (sum)' : 'peak', fmtEstFull(t.peak_bytes) +
			(t.peak_s !== null ? '; at ' + fmtTime(t.peak_s) : '')]);
		rows.push(['live at end', fmtEstFull(t.live_bytes) + '; ' + fmtCount(t.live_objects) +
			' objects']);
		rows.push(['max RSS', fmtBytes(t.max_rss) + (data.merged ? ' (sum)' : '')]);
		rows.push(['losses', t.losses.length
			? t.losses.map((l) => l[0] + '=' + l[1]).join(' ') : 'none']);
		rows.push([data.view + ' (the tables\' view)', fmtEstFull(data.view_total) +
			(data.at_s !== null ? '; at ' + fmtTime(data.at_s) : '') +
			(data.age_s !== null ? '; older than ' + fmtTime(data.age_s) : '')]);
		const table = $('summary-table');
		for (const [k, v] of rows) {
			const tr = el('tr');
			tr.append(el('td', k), el('td', v));
			table.append(tr);
		}
		const warn = $('warnings');
		if (t.frees_unknown)
			warn.append(el('li', t.frees_unknown + ' frees of blocks that were not live'));
		if (!t.trailer)
			warn.append(el('li', 'no trailer: the process crashed, was killed or exec\'d; ' +
				'"end" is its last complete record'));
		if (data.stacks_filtered)
			warn.append(el('li', data.stacks_filtered +
				' stacks left out by --focus/--ignore'));
	}

	/* ---- flame graph ---- */
	const fl = data.flame;
	const nodes = fl.nodes; /* [parent, function, file, module, flags, dropped, live, peak,
				 * alloc, live objects, alloc objects] */
	const str = (i) => (i >= 0 ? fl.strings[i] : null);
	const seriesOf = new Map(fl.series.map((s) => [s[0], s]));
	const METRICS = {
		live: { label: data.at_s !== null ? 'bytes live at ' + fmtTime(data.at_s)
			: 'bytes live at the end', col: 6, est: true },
		peak: { label: 'bytes live at the peak' +
			(t.peak_s !== null ? ' (' + fmtTime(t.peak_s) + ')' : ''), col: 7, est: true },
		alloc: { label: 'bytes allocated', col: 8, est: true },
		live_objects: { label: data.at_s !== null ? 'objects live at ' + fmtTime(data.at_s)
			: 'objects live at the end', col: 9, est: false },
		alloc_objects: { label: 'objects allocated', col: 10, est: false },
	};
	let metric = 'live', moment = null;

	function nodeName(i) {
		const n = nodes[i];
		if (n[0] < 0) return data.merged ? 'all processes' : basename(procs[0].exe) || 'all';
		if (n[4] & 2) return '(' + n[5] + ' smaller frame' + (n[5] === 1 ? '' : 's') + ')';
		return str(n[1]);
	}
	/* Every node's value for the metric or the moment; children after parents. */
	function values() {
		const v = new Float64Array(nodes.length);
		if (moment === null) {
			const col = METRICS[metric].col;
			for (let i = 0; i < nodes.length; i++)
				v[i] = METRICS[metric].est ? nodes[i][col][0] : nodes[i][col];
			return v;
		}
		for (const [i, s] of seriesOf) v[i] = s[1 + moment];
		for (let i = nodes.length - 1; i > 0; i--) v[nodes[i][0]] += v[i];
		return v;
	}
	function buildTree() {
		const v = values();
		const objs = new Array(nodes.length);
		for (let i = 0; i < nodes.length; i++) {
			if (!(v[i] > 0) && i > 0) continue;
			const o = { name: nodeName(i), value: v[i], i, children: [] };
			if (nodes[i][4] & 1) o.libtype = 'inlined';
			objs[i] = o;
			if (i > 0 && objs[nodes[i][0]]) objs[nodes[i][0]].children.push(o);
		}
		return objs[0];
	}
	function fmtValue(v) {
		return METRICS[metric].est || moment !== null ? fmtBytes(v) : fmtCount(v);
	}
	function caption() {
		if (moment !== null)
			return 'bytes live ' + fmtTime(data.timeline.t[moment]) + ' after the start' +
				' (the end of bucket ' + (moment + 1) + ' of ' + data.timeline.t.length + ')';
		return METRICS[metric].label;
	}

	/* d3-flame-graph takes a tooltip as a function (called once with the graph's svg) with
	 * show(event, d) and hide(); its own would show the names as markup. */
	const tip = $('tooltip');
	const tooltip = Object.assign(() => {}, {
		show(event, d) {
			const i = d.data.i, n = nodes[i], root = d3.select('#flame-graph g').datum();
			tip.replaceChildren();
			tip.append(el('div', nodeName(i), 'fn'));
			const where = [];
			if (str(n[2])) where.push(str(n[2]));
			if (str(n[3])) where.push('[' + str(n[3]) + ']');
			if (n[4] & 1) where.push('(inlined)');
			if (n[4] & 2) where.push('frames below ' + fmtPct(fl.min_share) +
				' of every total, summed');
			if (where.length) tip.append(el('div', where.join(' '), 'where'));
			const share = root && root.value > 0 ? ', ' + fmtPct(d.value / root.value) +
				' of the graph' : '';
			if (moment !== null)
				tip.append(el('div', caption() + ': ' + fmtBytes(d.value) + share +
					' (intervals are known at the end and at the peak only)'));
			else if (METRICS[metric].est)
				tip.append(el('div', METRICS[metric].label + ': ' +
					fmtEstFull(n[METRICS[metric].col]) + share));
			else
				tip.append(el('div', METRICS[metric].label + ': ' + fmtCount(d.value) + share));
			for (const m of ['live', 'alloc'])
				if (m !== metric || moment !== null)
					tip.append(el('div', METRICS[m].label + ': ' +
						fmtEstFull(n[METRICS[m].col])));
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

	let fg = null;
	function drawFlame() {
		const tree = buildTree();
		$('flame-caption').textContent = caption() + ': ' + fmtValue(tree.value);
		$('back-to-end').hidden = moment === null;
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
				.setLabelHandler((d) => d.data.name + ': ' + fmtValue(d.value))
				.setSearchHandler((results, sum, total) => {
					$('flame-details').textContent = results.length
						? results.length + ' frame' + (results.length === 1 ? '' : 's') +
						  ' match: ' + fmtValue(sum) + ', ' +
						  fmtPct(total > 0 ? sum / total : 0) + ' of the graph'
						: 'no frame matches';
				})
				.setDetailsElement($('flame-details'));
			d3.select('#flame-graph').datum(tree).call(fg);
		}
		const term = $('search').value;
		if (term) fg.search(term);
		chart && chart.redraw(false, false);
	}

	function fillMetrics() {
		const sel = $('metric');
		for (const [k, m] of Object.entries(METRICS)) {
			const o = el('option', m.label);
			o.value = k;
			sel.append(o);
		}
		sel.value = metric;
		sel.addEventListener('change', () => showMetric(sel.value));
		$('search').addEventListener('input', () => search($('search').value));
		$('reset-zoom').addEventListener('click', () => fg.resetZoom());
		$('back-to-end').addEventListener('click', () => showMoment(null));
		$('flame-note').textContent = fl.stacks + ' stacks, ' + fl.nodes_before +
			' frames merged by function under their callers, from the outermost frame down to' +
			' the allocation site (allocator frames left out); ' + nodes.length +
			' shown: those that hold at least ' + fmtPct(fl.min_share) + ' of a total (live,' +
			' peak, allocated, or the heap\'s highest point at a moment), at most ' +
			fl.max_nodes + ', and for the rest one "(N smaller frames)" under their caller.' +
			' Click a frame to zoom, search to highlight.';
	}
	function showMetric(m) {
		if (!(m in METRICS)) throw new Error('no metric ' + m);
		metric = m;
		moment = null;
		$('metric').value = m;
		drawFlame();
	}
	function showMoment(b) {
		if (b !== null && !(b >= 0 && b < fl.buckets)) throw new Error('no moment ' + b);
		moment = b;
		if (b === null) metric = $('metric').value;
		drawFlame();
	}
	function search(term) {
		$('search').value = term;
		if (term) fg.search(term);
		else {
			fg.clear();
			$('flame-details').textContent = '';
		}
	}

	/* ---- chart ---- */
	let chart = null;
	function drawChart() {
		const tl = data.timeline;
		$('timeline-hint').textContent = fl.buckets
			? 'The heap estimate at the end of each of ' + tl.t.length + ' equal parts of the' +
			  ' run, the highest estimate within each, and the RSS. Click a moment to see' +
			  ' what was live then in the flame graph below.'
			: tl.t.length ? 'The heap estimate and RSS over time. Merged processes have no' +
			  ' common moments, so the flame graph shows their ends and peaks only.'
			: 'No timeline: the profile has no record with a time.';
		if (!tl.t.length) return;
		const width = Math.max(400, $('chart').clientWidth);
		const peakMark = (u) => {
			const ctx = u.ctx;
			ctx.save();
			if (t.peak_s !== null && t.peak_bytes[3]) {
				const x = u.valToPos(t.peak_s, 'x', true), y = u.valToPos(t.peak_bytes[0], 'y', true);
				ctx.fillStyle = '#c0392b';
				ctx.beginPath();
				ctx.arc(x, y, 5 * devicePixelRatio, 0, 2 * Math.PI);
				ctx.fill();
				ctx.font = (12 * devicePixelRatio) + 'px sans-serif';
				ctx.textAlign = x > u.bbox.left + u.bbox.width / 2 ? 'right' : 'left';
				ctx.fillText('peak ' + fmtBytes(t.peak_bytes[0]) + ' at ' + fmtTime(t.peak_s),
					x + (ctx.textAlign === 'left' ? 8 : -8) * devicePixelRatio,
					Math.max(y - 6 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio));
			}
			if (moment !== null) {
				const x = u.valToPos(tl.t[moment], 'x', true);
				ctx.strokeStyle = '#1565c0';
				ctx.lineWidth = 2 * devicePixelRatio;
				ctx.beginPath();
				ctx.moveTo(x, u.bbox.top);
				ctx.lineTo(x, u.bbox.top + u.bbox.height);
				ctx.stroke();
			}
			ctx.restore();
		};
		const bytes = (u, v) => fmtBytes(v);
		chart = new uPlot({
			width,
			height: 280,
			scales: { x: { time: false } },
			cursor: { drag: { x: false, y: false } },
			axes: [
				{ values: (u, vals, axis, space, incr) => vals.map((v) => fmtTick(v, incr)) },
				{ values: (u, vals) => vals.map(fmtBytes), size: 80 },
			],
			series: [
				{ label: 'time', value: (u, v) => fmtTime(v) },
				{ label: 'heap estimate', stroke: '#c0392b', width: 2,
				  fill: 'rgba(192, 57, 43, 0.08)', value: bytes },
				{ label: 'highest in the interval', stroke: '#e67e22', dash: [4, 4],
				  value: bytes },
				{ label: 'RSS', stroke: '#455a64', width: 1.5, value: bytes },
			],
			hooks: { draw: [peakMark] },
		}, [tl.t, tl.heap, tl.heap_max, tl.rss], $('chart'));
		if (fl.buckets)
			chart.over.addEventListener('click', () => {
				if (chart.cursor.idx !== null && chart.cursor.idx !== undefined)
					showMoment(chart.cursor.idx);
			});
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
	function slope(s) {
		return (s.slope < 0 ? '-' : '+') + fmtBytes(Math.abs(s.slope)) + '/s';
	}
	/* cols: [header, sort key of a site, cells of a site, class]; a click on a header sorts. */
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
	const TREND_RANK = { growing: 0, plateau: 1, flat: 2, unknown: 3 };
	function trendCell(s) {
		return el('td', s.trend, 'trend-' + s.trend);
	}
	function fillSites() {
		const sites = data.sites.map((s, i) => Object.assign({ rank: i + 1 }, s));
		$('sites-caption').textContent = (data.sites_total > sites.length
			? 'The top ' + sites.length + ' of ' + data.sites_total + ' sites'
			: sites.length + ' site' + (sites.length === 1 ? '' : 's')) + ' of the ' + data.view +
			' view, ranked by it (#); click a column to sort. A site is a stack\'s first frame' +
			' outside the allocator; ~ marks an estimate from too few samples to be more than' +
			' an order of magnitude.';
		sortableTable($('sites-table'), sites, [
			['#', (s) => s.rank, (s) => [el('td', s.rank)]],
			['site', (s) => s.function, (s) => [siteCell(s)], 'site'],
			['live at end', (s) => s.live[0], (s) => estCells(s.live), '', 2],
			['at peak', (s) => s.peak[0], (s) => estCells(s.peak), '', 2],
			['allocated', (s) => s.alloc[0], (s) => estCells(s.alloc), '', 2],
			['objects live', (s) => s.live_objects, (s) => [el('td', fmtCount(s.live_objects))]],
			['objects allocated', (s) => s.alloc_objects,
				(s) => [el('td', fmtCount(s.alloc_objects))]],
			['samples', (s) => s.alloc[3], (s) => [el('td', s.alloc[3])]],
			['share', (s) => s.share, (s) => [el('td', fmtPct(s.share))]],
			['trend', (s) => TREND_RANK[s.trend], (s) => [trendCell(s)]],
		], 0);
		$('growth-caption').textContent = 'Each site\'s heaviest stack over the run, as' +
			' `leek report growth` judges it: growing (still rising at the end), plateau' +
			' (rose, then levelled off), flat, or unknown (too few samples); the confidence is' +
			' 1 - p of the test behind the verdict, the slope Sen\'s slope over the last part' +
			' of the run.';
		sortableTable($('growth-table'), sites.slice().sort((a, b) =>
			TREND_RANK[a.trend] - TREND_RANK[b.trend] || b.live[0] - a.live[0]), [
			['site', (s) => s.function, (s) => [siteCell(s)], 'site'],
			['verdict', (s) => TREND_RANK[s.trend] * 2 - s.confidence, (s) => [trendCell(s)]],
			['confidence', (s) => s.confidence, (s) => [el('td', fmtPct(s.confidence))]],
			['slope', (s) => s.slope, (s) => [el('td', slope(s))]],
			['live at end', (s) => s.live[0], (s) => estCells(s.live), '', 2],
		], 1);
	}

	/* The graph and the chart follow the window's width (the tables do by themselves). */
	let resizing = null;
	window.addEventListener('resize', () => {
		clearTimeout(resizing);
		resizing = setTimeout(() => {
			const w = Math.max(400, $('flame-graph').clientWidth);
			if (fg && w !== fg.width()) fg.width(w).update();
			if (chart) chart.setSize({ width: Math.max(400, $('chart').clientWidth),
						   height: 280 });
		}, 150);
	});

	fillSummary();
	fillMetrics();
	drawChart();
	drawFlame();
	fillSites();

	window.leek = {
		showMoment,
		showMetric,
		search,
		/* What the flame graph shows now: its metric or moment and the root's value. */
		state() {
			const root = d3.select('#flame-graph g').datum();
			return { metric, moment, value: root ? root.value : null,
				 buckets: fl.buckets, nodes: nodes.length };
		},
		renderMs: performance.now() - started,
	};
	document.body.dataset.ready = '1';
})();
