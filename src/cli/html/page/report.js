/* report.js: draws leek's HTML report from the JSON that out-html.c writes (its keys:
 * docs/design.md, "The HTML report"), with common.js's helpers. The drawing is the libraries':
 * uPlot for the chart over time, d3-flame-graph for the flame graphs; this file turns the data
 * into their inputs, fills the tables and wires the controls.
 *
 * The flame graph's nodes carry [..., live, peak, alloc, live objects, alloc objects] (common.js
 * has the first columns). The flame graph of a moment is built here from the nodes' series: each
 * node's live bytes at the end of bucket b are its own series[b] plus its children's, summed from
 * the leaves up (children come after their parents in the data).
 *
 * window.leek is the page's small API (showMoment, showMetric, search, state), which the tests
 * drive as a person would through the controls.
 *
 * Never: put a string from the data into the page as markup (innerHTML, d3's .html()): every
 * name in it comes from a profile and is untrusted; textContent, .text() and setAttribute only.
 */
'use strict';
(function () {
	const P = leekPage;
	const { data, $, el, nodes, fl } = P;
	const { fmtBytes, fmtEstFull, fmtCount, fmtTime, fmtPct, basename } = P;
	const started = performance.now();

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
		const rows = P.summaryRows(procs, t, data.merged);
		rows.push([data.view + ' (the tables\' view)', fmtEstFull(data.view_total) +
			(data.at_s !== null ? '; at ' + fmtTime(data.at_s) : '') +
			(data.age_s !== null ? '; older than ' + fmtTime(data.age_s) : '')]);
		P.fillRows($('summary-table'), rows);
		const warn = $('warnings');
		P.totalsWarnings(warn, t, '');
		if (data.stacks_filtered)
			warn.append(el('li', data.stacks_filtered +
				' stacks left out by --focus/--ignore'));
	}

	/* ---- flame graph ---- */
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
	const rootName = data.merged ? 'all processes' : basename(procs[0].exe) || 'all';

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
	function fmtValue(v) {
		return METRICS[metric].est || moment !== null ? fmtBytes(v) : fmtCount(v);
	}
	function caption() {
		if (moment !== null)
			return 'bytes live ' + fmtTime(data.timeline.t[moment]) + ' after the start' +
				' (the end of bucket ' + (moment + 1) + ' of ' + data.timeline.t.length + ')';
		return METRICS[metric].label;
	}
	function tooltip(tip, i, d) {
		const n = nodes[i], root = d3.select('#flame-graph g').datum();
		P.nodeTitle(tip, i, P.nodeName(i, rootName));
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
	}
	const graph = P.flameGraph({
		values,
		rootName,
		label: (v) => fmtValue(v),
		tooltip,
		onDraw(tree) {
			$('flame-caption').textContent = caption() + ': ' + fmtValue(tree.value);
			$('back-to-end').hidden = moment === null;
			if (chart) chart.redraw(false, false);
		},
		onResize() {
			if (chart) chart.setSize({ width: Math.max(400, $('chart').clientWidth),
						   height: 280 });
		},
	});

	function fillMetrics() {
		P.fillSelect($('metric'), METRICS, metric, showMetric);
		$('back-to-end').addEventListener('click', () => showMoment(null));
		$('flame-note').textContent = P.flameNote('a total (live, peak, allocated, or the' +
			' heap\'s highest point at a moment)');
	}
	function showMetric(m) {
		if (!(m in METRICS)) throw new Error('no metric ' + m);
		metric = m;
		moment = null;
		$('metric').value = m;
		graph.draw();
	}
	function showMoment(b) {
		if (b !== null && !(b >= 0 && b < fl.buckets)) throw new Error('no moment ' + b);
		moment = b;
		if (b === null) metric = $('metric').value;
		graph.draw();
	}

	/* ---- chart ---- */
	/* A tick of the time axis: the unit and decimals that tell ticks incr seconds apart. */
	function fmtTick(s, incr) {
		const [unit, name] = incr < 1e-3 ? [1e-6, 'us'] : incr < 1 ? [1e-3, 'ms']
			: incr < 600 ? [1, 's'] : [60, 'min'];
		const dec = Math.max(0, Math.min(6, Math.ceil(-Math.log10(incr / unit) - 1e-9)));
		return (s / unit).toFixed(dec) + ' ' + name;
	}
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
	const { siteCell, estCells } = P;
	function slope(s) {
		return (s.slope < 0 ? '-' : '+') + fmtBytes(Math.abs(s.slope)) + '/s';
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
		P.sortableTable($('sites-table'), sites, [
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
		P.sortableTable($('growth-table'), sites.slice().sort((a, b) =>
			TREND_RANK[a.trend] - TREND_RANK[b.trend] || b.live[0] - a.live[0]), [
			['site', (s) => s.function, (s) => [siteCell(s)], 'site'],
			['verdict', (s) => TREND_RANK[s.trend] * 2 - s.confidence, (s) => [trendCell(s)]],
			['confidence', (s) => s.confidence, (s) => [el('td', fmtPct(s.confidence))]],
			['slope', (s) => s.slope, (s) => [el('td', slope(s))]],
			['live at end', (s) => s.live[0], (s) => estCells(s.live), '', 2],
		], 1);
	}

	fillSummary();
	fillMetrics();
	drawChart();
	graph.draw();
	fillSites();

	window.leek = {
		showMoment,
		showMetric,
		search: graph.search,
		/* What the flame graph shows now: its metric or moment and the root's value. */
		state() {
			return { metric, moment, value: graph.rootValue(), buckets: fl.buckets,
				 nodes: nodes.length };
		},
		renderMs: performance.now() - started,
	};
	document.body.dataset.ready = '1';
})();
