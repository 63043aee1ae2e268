/* diff.js: draws `leek diff --format html` from the JSON that src/cli/diff/diff-html.c writes
 * (its keys: docs/design.md, "The diff's page"), with common.js's helpers: both sides' summaries
 * and the whole's change, a flame graph of the change, and the sites' changes in the diff's
 * ranking, sortable.
 *
 * A change is {values: [base, new, [value, lo, hi]], p, q, significant, tested}, base and new
 * estimates [value, lo, hi, samples, too_few]; change() names its values. The flame graph's nodes carry [..., live base, live
 * new, live change [value, lo, hi], live width, alloc base, alloc new, alloc change, alloc width]
 * (common.js has the first columns). Its width is, by default, the gross change of a frame: what
 * changed under it, whichever way (a parent is never narrower than its children); its colour the
 * sign of its net change, red for more and blue for less, the deeper the more of the width is
 * net. The sides' own bytes can be drawn too, coloured alike.
 *
 * window.leek is the page's small API (showMetric, search, state), which the tests drive as a
 * person would through the controls.
 *
 * Never: put a string from the data into the page as markup (innerHTML, d3's .html()): every
 * name in it comes from a profile and is untrusted; textContent, .text() and setAttribute only.
 */
'use strict';
(function () {
	const P = leekPage;
	const { data, $, el, nodes, fl } = P;
	const { fmtBytes, fmtEst, fmtEstFull, fmtChange, fmtChangeInterval, fmtTime, fmtPct } = P;
	const started = performance.now();
	const change = (c) => Object.assign({ base: c.values[0], new: c.values[1],
					      change: c.values[2] }, c);
	data.live = change(data.live);
	data.alloc = change(data.alloc);
	for (const s of data.sites) {
		s.live = change(s.live);
		s.alloc = change(s.alloc);
	}
	const moments = data.mode === 'moments';
	const sides = data.sides;
	/* What the two sides are called. */
	const NAMES = moments
		? ['at ' + fmtTime(data.from_s), data.at_s !== null ? 'at ' + fmtTime(data.at_s) : 'at the end']
		: ['base', 'new'];
	const LIVE = moments ? 'live bytes' : data.live_at === 'peak' ? 'live bytes at each peak'
		: data.live_at === 'time' ? 'live bytes ' + fmtTime(data.at_s) + ' after the start'
		: 'live bytes at the end';
	const SPAN = moments ? 'from ' + fmtTime(data.from_s) + ' to ' +
		(data.at_s !== null ? fmtTime(data.at_s) : 'the end') : 'from base to new';

	function changeText(c) {
		if (!c.tested && !moments) return fmtChange(c.change[0]) + ' (no sample on either side)';
		return fmtChange(c.change[0]) + ' ' + fmtChangeInterval(c.change[1], c.change[2]) +
			(c.tested ? (c.significant ? ', significant' : ', not significant') +
				(c.p < 1e-4 ? ' (p < 0.0001)' : ' (p ' + c.p.toPrecision(2) + ')') : '');
	}

	/* ---- summary ---- */
	function fillSummary() {
		const exe = P.basename(sides[sides.length - 1].processes[0].exe);
		const title = 'leek diff: ' + exe + (moments ? ', ' + NAMES[0] + ' and ' + NAMES[1]
			: ', pid ' + sides[0].processes[0].pid + ' and ' + sides[1].processes[0].pid);
		document.title = title;
		$('title').textContent = title;
		$('subtitle').textContent = sides.map((s) => s.processes.map((p) => p.path).join('  '))
			.join('  ->  ');
		const rows = [
			[LIVE, NAMES[0] + ' ' + fmtEstFull(data.live.base) + '; ' + NAMES[1] + ' ' +
				fmtEstFull(data.live.new)],
			['live change', changeText(data.live)],
		];
		if (moments) {
			rows.push(['allocated between', fmtEstFull(data.alloc.new)]);
		} else {
			rows.push(['allocated', 'base ' + fmtEstFull(data.alloc.base) + '; new ' +
				fmtEstFull(data.alloc.new)]);
			rows.push(['allocated change', changeText(data.alloc)]);
		}
		rows.push(['sites', data.sites_total + ' compared, ' + data.sites_significant +
			' with a significant change of ' + (data.figure === 'alloc' ? 'allocated' : 'live') +
			' bytes (at a false discovery rate of ' + fmtPct(data.fdr) + ')']);
		const wrappers = [...new Set(sides.flatMap((s) => s.wrappers))];
		rows.push(['wrappers skipped', wrappers.length ? wrappers.join(', ') +
			' (found in the stacks of both sides)' : data.auto_wrappers ? 'none'
			: 'none: --no-auto-wrappers']);
		P.fillRows($('change-table'), rows);
		sides.forEach((s, i) => {
			$('side' + i + '-title').textContent = moments ? 'the profile' + (s.processes.length > 1
				? 's, merged' : '') : NAMES[i] + (s.processes.length > 1 ? ': ' +
				s.processes.length + ' profiles, merged' : '');
			const rows = P.summaryRows(s.processes, s.totals, s.processes.length > 1);
			rows.push(['period (the largest)', s.period <= 1 ? 'exact' : fmtBytes(s.period)]);
			P.fillRows($('side' + i + '-table'), rows);
			P.totalsWarnings($('warnings'), s.totals, moments ? '' : NAMES[i] + ': ');
		});
		if (moments) $('side1-title').parentNode.remove();
		if (data.stacks_filtered)
			$('warnings').append(el('li', data.stacks_filtered +
				' stacks left out by --focus/--ignore'));
	}

	/* ---- flame graph ---- */
	const COL = { live: 6, alloc: 10 }; /* base, new, change, width from there */
	const METRICS = {
		live: { label: 'change in ' + LIVE + ' ' + SPAN, fig: 'live', width: 3 },
		alloc: { label: (moments ? 'bytes allocated ' : 'change in bytes allocated ') + SPAN,
			 fig: 'alloc', width: 3 },
		base: { label: LIVE + ', ' + NAMES[0] + ' (coloured by the change)', fig: 'live',
			width: 0 },
		new: { label: LIVE + ', ' + NAMES[1] + ' (coloured by the change)', fig: 'live',
		       width: 1 },
	};
	let metric = data.figure === 'alloc' ? 'alloc' : 'live';
	const rootName = 'all stacks';

	function values() {
		const m = METRICS[metric], c = COL[m.fig] + m.width;
		const v = new Float64Array(nodes.length);
		for (let i = 0; i < nodes.length; i++)
			v[i] = m.width === 3 ? nodes[i][c] : nodes[i][c][0];
		return v;
	}
	/* Red for more, blue for less, grey for no net change; a = the share of the node's width
	 * that its net change is. */
	function color(d) {
		const m = METRICS[metric], n = nodes[d.data.i];
		if (moments && m.fig === 'alloc') return 'rgb(230, 160, 90)';
		const net = n[COL[m.fig] + 2][0];
		const scale = Math.max(d.value, Math.abs(net));
		const a = scale > 0 ? Math.min(1, Math.abs(net) / scale) : 0;
		const fade = Math.round(225 * (1 - a) + 30 * a);
		if (!(a > 0.005)) return 'rgb(215, 215, 215)';
		return net > 0 ? 'rgb(235, ' + fade + ', ' + fade + ')'
			: 'rgb(' + fade + ', ' + fade + ', 235)';
	}
	function figureLines(tip, n, fig) {
		const c = COL[fig];
		if (moments && fig === 'alloc') {
			tip.append(el('div', 'allocated between: ' + fmtEstFull(n[c + 1])));
			return;
		}
		tip.append(el('div', (fig === 'live' ? LIVE : 'bytes allocated') + ': ' + NAMES[0] +
			' ' + fmtEstFull(n[c]) + '; ' + NAMES[1] + ' ' + fmtEstFull(n[c + 1])));
		tip.append(el('div', 'change ' + fmtChange(n[c + 2][0]) + ' ' +
			fmtChangeInterval(n[c + 2][1], n[c + 2][2])));
	}
	function tooltip(tip, i, d) {
		const n = nodes[i], root = d3.select('#flame-graph g').datum();
		P.nodeTitle(tip, i, P.nodeName(i, rootName));
		tip.append(el('div', METRICS[metric].label + ': ' + fmtBytes(d.value) +
			(root && root.value > 0 ? ', ' + fmtPct(d.value / root.value) + ' of the graph' : '')));
		figureLines(tip, n, METRICS[metric].fig);
		figureLines(tip, n, METRICS[metric].fig === 'live' ? 'alloc' : 'live');
	}
	function caption(v) {
		const m = METRICS[metric];
		if (m.width === 3 && !(moments && m.fig === 'alloc'))
			return m.label + ': ' + fmtBytes(v) + ' changed, net ' +
				fmtChange(nodes[0][COL[m.fig] + 2][0]);
		return m.label + ': ' + fmtBytes(v);
	}
	const graph = P.flameGraph({
		values,
		rootName,
		label: fmtBytes,
		tooltip,
		color,
		onDraw(tree) {
			$('flame-caption').textContent = caption(tree.value);
			const m = METRICS[metric];
			$('flame-legend').textContent = moments && m.fig === 'alloc'
				? 'Each frame as wide as what its stacks allocated between the two moments.'
				: (m.width === 3 ? 'Each frame as wide as what changed under it, growth and' +
				   ' shrinkage alike (the sizes of the changes of the frames under it,' +
				   ' added: what shrank shows as much as what grew); ' : 'Each frame as' +
				   ' wide as its bytes on that side; ') + 'red for a frame whose bytes' +
				  ' grew, blue for one whose bytes shrank, the deeper the more of its width' +
				  ' is that net change; grey, no net change.';
		},
	});

	function fillMetrics() {
		P.fillSelect($('metric'), METRICS, metric, showMetric);
		$('flame-note').textContent = P.flameNote('what changed, or of a side\'s live bytes') +
			(moments ? '' : ' Both sides skip the same wrappers, so a frame means the same' +
			 ' on both.');
	}
	function showMetric(m) {
		if (!(m in METRICS)) throw new Error('no metric ' + m);
		metric = m;
		$('metric').value = m;
		graph.draw();
	}

	/* ---- the sites' changes ---- */
	function changeCells(c) {
		const cls = (c.change[0] > 0 ? 'grew' : c.change[0] < 0 ? 'shrank' : '') +
			(c.significant ? ' significant' : '');
		return [el('td', (c.significant ? '* ' : '') + fmtChange(c.change[0]), cls),
			el('td', fmtChangeInterval(c.change[1], c.change[2]))];
	}
	function estCell(e) {
		return el('td', e[3] ? fmtEst(e) : '-', e[4] ? 'few' : '');
	}
	function fillSites() {
		const sites = data.sites.map((s, i) => Object.assign({ rank: i + 1 }, s));
		const by = data.figure === 'alloc' ? 'alloc' : 'live';
		const abs = (c) => Math.abs(c.change[0]);
		$('sites-caption').textContent = (data.sites_total > sites.length
			? 'The top ' + sites.length + ' of ' + data.sites_total + ' sites compared'
			: sites.length + ' site' + (sites.length === 1 ? '' : 's') + ' compared') +
			', ranked as `leek diff` ranks them (#): by the size of the change in ' +
			(by === 'alloc' ? 'bytes allocated' : LIVE) + '; click a column to sort. * marks a' +
			' change beyond the sampling noise of the two estimates (at most ' +
			fmtPct(data.fdr) + ' of the changes marked are expected to be noise); ~ an' +
			' estimate from too few samples to be more than an order of magnitude.';
		const cols = [
			['#', (s) => s.rank, (s) => [el('td', s.rank)]],
			['site', (s) => s.function, (s) => [P.siteCell(s)], 'site'],
			['live, ' + NAMES[0], (s) => s.live.base[0], (s) => [estCell(s.live.base)]],
			['live, ' + NAMES[1], (s) => s.live.new[0], (s) => [estCell(s.live.new)]],
			['live change', (s) => abs(s.live), (s) => changeCells(s.live), '', 2],
		];
		if (moments)
			cols.push(['allocated between', (s) => s.alloc.new[0], (s) => [estCell(s.alloc.new)]]);
		else
			cols.push(['allocated change', (s) => abs(s.alloc), (s) => changeCells(s.alloc), '',
				   2]);
		cols.push(['stacks', (s) => s.stacks, (s) => [el('td', s.stacks)]]);
		P.sortableTable($('sites-table'), sites, cols, 0);
	}

	fillSummary();
	fillMetrics();
	graph.draw();
	fillSites();

	window.leek = {
		showMetric,
		search: graph.search,
		/* What the flame graph shows now: its metric and the root's value. */
		state() {
			return { metric, value: graph.rootValue(), nodes: nodes.length };
		},
		renderMs: performance.now() - started,
	};
	document.body.dataset.ready = '1';
})();
