/* test-diff.c: `leek diff` on profiles built record by record (tests/lib/build-profile.h), where
 * every number is known: each ALLOC is a sample of weight 1/p(size) (docs/sampling.md section 4),
 * so the diff's values are worked out here from the records, and its verdicts from section 12.
 *
 *   - identical profiles: every change 0, nothing significant;
 *   - a site that grew, one new, one vanished, a few samples more or fewer, a heavy block seen
 *     on one side only: significant exactly where section 12 says;
 *   - exact mode: every change is a fact; the q-values are Benjamini-Hochberg's of the p-values;
 *   - --from/--to against `leek report inuse --at` at both moments, and what was allocated;
 *   - groups of files merged on each side (--base), --by, --top, --min-share, --focus;
 *   - damaged, foreign and missing profiles on either side: exit 2, the offset named, nothing
 *     on stdout; usage errors: exit 1;
 *   - --format html: the page's data is the diff's, its flame graph as wide as every change.
 * Nothing runs under LD_PRELOAD, so this also runs under ASan and UBSan (suite unit).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-profile.h"
#include "diff-util.h"
#include "files.h"
#include "harness.h"

#define T 524288
#define KiB 1024ull
#define MiB (1024ull * 1024)

/* What a built profile holds, in time order: at time t (ns since the start), `count` ALLOCs of
 * `size` bytes at stack `stack`, or (size 0) FREEs of the `count` oldest live blocks of that
 * stack. */
struct ev {
	uint64_t t, stack, size, count;
};

#define NSTACKS 8
#define MAX_LIVE 4096

/* Writes the profile of events ev[0..n) at period (1: exact) to dir/name; returns its path. */
static char *build(const char *dir, const char *name, uint64_t period, const struct ev *ev,
		   size_t n)
{
	static const uint64_t none[LK_CNT_MAX + 1];
	uint64_t live[NSTACKS + 1][MAX_LIVE], head[NSTACKS + 1] = { 0 }, tail[NSTACKS + 1] = { 0 };
	uint64_t addr = 0x10000, now = 0;
	struct pbuf b = { 0 };
	char *path;

	pb_header(&b, &(struct pb_header){ .pid = 42, .period = period, .exe = "/usr/bin/diffed",
					   .flags = period == 1 ? LK_HDR_EXACT : 0,
					   .start_realtime_ns = 1700000000000000000 });
	/* The stacks used, and those below them: ids run 1, 2, ... (docs/format.md). */
	for (uint64_t k = 1, top = 0; k <= NSTACKS; k++) {
		for (size_t i = 0; i < n; i++)
			top = ev[i].stack > top ? ev[i].stack : top;
		if (k <= top)
			pb_made_up_stack(&b, k, 2);
	}
	for (size_t i = 0; i < n; i++) {
		for (uint64_t k = 0; k < ev[i].count; k++) {
			uint64_t s = ev[i].stack, dt = ev[i].t > now ? ev[i].t - now : 0;
			now += dt;
			if (ev[i].size) {
				pb_alloc(&b, dt, 1, addr, ev[i].size, s);
				live[s][tail[s]++ % MAX_LIVE] = addr;
				addr += 0x40;
			} else {
				ASSERT_TRUE(head[s] < tail[s]);
				pb_free(&b, dt, 1, live[s][head[s]++ % MAX_LIVE]);
			}
		}
	}
	PB_REC(&b, lk_rec_counters(rec, LK_REC_TRAILER, 1, 1700000001000000000, none));
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		FAIL("out of memory");
	write_file(path, b.p, b.len);
	free(b.p);
	free(b.map);
	return path;
}

/* The function the report gives made-up stack k: its first frame, in no module. */
static const char *site_of(uint64_t k)
{
	static char name[NSTACKS + 1][32];

	snprintf(name[k], sizeof(name[k]), "0x%llx", 0x400000ull + k * 0x40);
	return name[k];
}

/* What `count` samples of `size` bytes estimate at period T (exact: their bytes). */
static double bytes(uint64_t period, uint64_t size, uint64_t count)
{
	double p = period == 1 ? 1 : -expm1(-(double)size / (double)period);

	return (double)count * (double)size / p;
}

/* A site's change of figure: base and new as estimated, change = new - base (each rounded in
 * the JSON: within 1 byte), its interval around it, significance as q <= 0.05. */
static void expect_change(const struct json *site, const char *figure, double base, double new,
			  bool significant)
{
	const struct json *c = diff_change(site, figure);
	double lo, hi, change = get_num(c, "change_bytes");

	ASSERT_NEAR(get_num(c, "base_bytes"), base, 0.5 + 1e-9 * base);
	ASSERT_NEAR(get_num(c, "new_bytes"), new, 0.5 + 1e-9 * new);
	ASSERT_NEAR(change, new - base, 1 + 1e-9 * (base + new));
	get_ci95(c, "change_bytes", &lo, &hi);
	ASSERT_TRUE(lo <= change && change <= hi);
	if (get_bool(c, "significant") != significant)
		FAIL("%s %s: significant is %d (p %g, q %g), expected %d",
		     get_str(site, "function"), figure, !significant, get_num(c, "p_value"),
		     get_num(c, "q_value"), significant);
	if (json_get(c, "p_value")->type == JSON_NULL) { /* no sample to test */
		ASSERT_TRUE(json_get(c, "q_value")->type == JSON_NULL);
		ASSERT_EQ(get_bool(c, "significant"), false);
		return;
	}
	ASSERT_EQ(get_bool(c, "significant"), get_num(c, "q_value") <= 0.05);
	ASSERT_TRUE(get_num(c, "q_value") >= get_num(c, "p_value"));
}

/* Identical profiles: every change is 0, with p = 1, and no site is significant. */
TEST(identical_profiles)
{
	static const struct ev ev[] = {
		{ 1000, 1, 4096, 100 }, { 2000, 2, 64 * KiB, 3 }, { 3000, 3, MiB, 1 },
		{ 4000, 4, 64, 20 },    { 5000, 4, 0, 10 },
	};
	char dir[256], *a, *b;
	struct json *doc;
	struct proc p;

	tmp_dir(dir);
	a = build(dir, "a.lk", T, ev, 5);
	b = build(dir, "b.lk", T, ev, 5);
	doc = leek_diff_json(&p, dir, (const char *[]){ a, b, NULL });
	ASSERT_EQ(get_u64(doc, "sites_total"), 4);
	ASSERT_EQ(get_u64(doc, "sites_significant"), 0);
	for (uint64_t k = 1; k <= 4; k++) {
		const struct json *s = diff_site(doc, site_of(k));
		ASSERT_TRUE(s != NULL);
		ASSERT_EQ(get_bool(s, "significant"), false);
		ASSERT_EQ(get_num(diff_change(s, "live"), "change_bytes"), 0);
		ASSERT_EQ(get_num(diff_change(s, "live"), "p_value"), 1);
		ASSERT_EQ(get_num(diff_change(s, "alloc"), "change_bytes"), 0);
	}
	expect_change(diff_site(doc, site_of(1)), "live", bytes(T, 4096, 100),
		      bytes(T, 4096, 100), false);
	expect_change(diff_site(doc, site_of(4)), "alloc", bytes(T, 64, 20), bytes(T, 64, 20),
		      false);
	ASSERT_EQ(get_bool(diff_change(doc, "live"), "significant"), false);
	json_free(doc);
	proc_free(&p);
	tmp_dir_remove(dir);
}

/* Section 12 site by site, at the default period (w = 1/p(s) a sample):
 *   1  4 KiB, 100 -> 200 samples: z = (100 - 1/2) / sqrt(300 (1-p)) = 5.7: significant
 *   2  64 KiB, 3 -> 6: z = 2.5 / sqrt(9 (1 - 0.118)) = 0.89: not
 *   3  new, 0 -> 50 of 4 KiB: z = 49.5 / sqrt(50) = 7: significant
 *   4  vanished, 50 -> 0 of 4 KiB: significant
 *   5  new, 0 -> 2 of 4 KiB: z = 1.5 / sqrt(2) = 1.06: not
 *   6  one 1 MiB block (p = 0.865) on the base side only: |change| - one step = 0: not
 *   7  unchanged, 30 of 16 KiB: not
 *   8  4 KiB, 20 -> 36: z = 15.5 / sqrt(56 (1-p)) = 2.07, p = 0.038: below 0.05 alone, but 4th
 *      of 8 sites by p, so q = 8 p / 4 = 0.077: not (the false discovery rate at work)
 * and the q-values are Benjamini-Hochberg's over the 8 sites, recomputed here from the p-values
 * the diff prints. Sites rank by the size of their change. */
TEST(changes_and_their_significance)
{
	static const struct ev base[] = {
		{ 1000, 1, 4096, 100 }, { 1000, 2, 64 * KiB, 3 }, { 1000, 4, 4096, 50 },
		{ 1000, 6, MiB, 1 },    { 1000, 7, 16 * KiB, 30 }, { 1000, 8, 4096, 20 },
	};
	static const struct ev new[] = {
		{ 1000, 1, 4096, 200 }, { 1000, 2, 64 * KiB, 6 }, { 1000, 3, 4096, 50 },
		{ 1000, 5, 4096, 2 },   { 1000, 7, 16 * KiB, 30 }, { 1000, 8, 4096, 36 },
	};
	static const bool want[9] = { [1] = true, [3] = true, [4] = true };
	char dir[256], *a, *b;
	double p[9], q[9], prev = INFINITY;
	const struct json *sites;
	struct json *doc;
	struct proc r;

	tmp_dir(dir);
	a = build(dir, "a.lk", T, base, 6);
	b = build(dir, "b.lk", T, new, 6);
	doc = leek_diff_json(&r, dir, (const char *[]){ a, b, NULL });
	ASSERT_EQ(get_u64(doc, "sites_total"), 8);
	ASSERT_EQ(get_u64(doc, "sites_significant"), 3);
	expect_change(diff_site(doc, site_of(1)), "live", bytes(T, 4096, 100), bytes(T, 4096, 200),
		      true);
	expect_change(diff_site(doc, site_of(2)), "live", bytes(T, 65536, 3), bytes(T, 65536, 6),
		      false);
	expect_change(diff_site(doc, site_of(3)), "live", 0, bytes(T, 4096, 50), true);
	expect_change(diff_site(doc, site_of(4)), "live", bytes(T, 4096, 50), 0, true);
	expect_change(diff_site(doc, site_of(5)), "live", 0, bytes(T, 4096, 2), false);
	expect_change(diff_site(doc, site_of(6)), "live", bytes(T, MiB, 1), 0, false);
	expect_change(diff_site(doc, site_of(7)), "live", bytes(T, 16384, 30), bytes(T, 16384, 30),
		      false);
	expect_change(diff_site(doc, site_of(8)), "live", bytes(T, 4096, 20), bytes(T, 4096, 36),
		      false);
	ASSERT_NEAR(get_num(diff_change(diff_site(doc, site_of(8)), "live"), "p_value"), 0.038,
		    0.001);
	/* Nothing is freed: allocated and live are the same figures. */
	expect_change(diff_site(doc, site_of(1)), "alloc", bytes(T, 4096, 100),
		      bytes(T, 4096, 200), true);
	for (uint64_t k = 1; k <= 8; k++) {
		const struct json *s = diff_site(doc, site_of(k));
		ASSERT_EQ(get_bool(s, "significant"), want[k]);
		p[k] = get_num(diff_change(s, "live"), "p_value");
		q[k] = get_num(diff_change(s, "live"), "q_value");
	}
	/* q of site k: min over the sites j with p_j >= p_k of 8 p_j / rank(j). */
	for (uint64_t k = 1; k <= 8; k++) {
		double best = 1;
		for (uint64_t j = 1; j <= 8; j++) {
			unsigned rank = 0;
			for (uint64_t i = 1; i <= 8; i++)
				rank += p[i] < p[j] || (p[i] == p[j] && i <= j);
			if (p[j] >= p[k] && 8 * p[j] / rank < best)
				best = 8 * p[j] / rank;
		}
		ASSERT_NEAR(q[k], best, 5e-6); /* both printed to 6 decimals */
	}
	sites = json_get(doc, "sites");
	for (size_t i = 0; i < sites->len; i++) {
		double c = fabs(get_num(diff_change(json_at(sites, i), "live"), "change_bytes"));
		ASSERT_EQ(get_u64(json_at(sites, i), "rank"), i + 1);
		ASSERT_TRUE(c <= prev);
		prev = c;
	}
	json_free(doc);
	proc_free(&r);

	/* The text: the whole's change, and a '*' on the three significant sites' lines. */
	leek_diff(&r, dir, (const char *[]){ a, b, NULL });
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "== diff: live bytes at the end ==");
	ASSERT_CONTAINS(r.out, "8 compared, 3 with a significant change of live bytes");
	size_t stars = 0;
	for (const char *s = r.out; (s = strstr(s, "   * ")); s++)
		stars++;
	ASSERT_EQ(stars, 3 + 3); /* the live change, and the alloc change, of each */
	proc_free(&r);
	tmp_dir_remove(dir);
}

/* The page's data: the JSON text of the leek-data element of page (an HTML file). */
static struct json *page_data(const char *page)
{
	static const char open[] = "<script type=\"application/json\" id=\"leek-data\">";
	const char *at = strstr(page, open), *end;
	struct json *doc = NULL;
	char err[256];

	ASSERT_TRUE(at != NULL);
	at += strlen(open);
	end = strstr(at, "</script>");
	ASSERT_TRUE(end != NULL);
	if (json_parse(at, (size_t)(end - at), &doc, err, sizeof(err)) < 0)
		FAIL("the page's data is no JSON: %s", err);
	return doc;
}

/* --format html: one page (test-html.c loads pages in Chromium; this runs under ASan too), made
 * into -o FILE once the diff is, whose data is the diff's: the sites in its ranking with the
 * JSON's changes, and a flame graph of both sides whose root is as wide as every change added
 * (each made-up stack is a site of its own, a leaf of the graph). A side that cannot be read
 * leaves no page. */
TEST(html_page)
{
	static const struct ev base[] = {
		{ 1000, 1, 4096, 100 }, { 1000, 2, 64 * KiB, 3 }, { 1000, 4, 4096, 50 },
		{ 1000, 6, MiB, 1 },    { 1000, 7, 16 * KiB, 30 },
	};
	static const struct ev new[] = {
		{ 1000, 1, 4096, 200 }, { 1000, 2, 64 * KiB, 6 }, { 1000, 3, 4096, 50 },
		{ 1000, 5, 4096, 2 },   { 1000, 7, 16 * KiB, 30 },
	};
	char dir[256], out[300], *a, *b, *page;
	const struct json *sites, *psites, *root;
	struct json *doc, *data;
	double gross = 0;
	struct proc r;

	tmp_dir(dir);
	a = build(dir, "a.lk", T, base, 5);
	b = build(dir, "b.lk", T, new, 5);
	doc = leek_diff_json(&r, dir, (const char *[]){ a, b, NULL });
	proc_free(&r);
	snprintf(out, sizeof(out), "%s/d.html", dir);
	leek_diff(&r, dir, (const char *[]){ "--format", "html", "-o", out, a, b, NULL });
	ASSERT_EQ(r.status, 0);
	ASSERT_EQ(r.out_len, 0);
	proc_free(&r);
	page = read_file(out, NULL);
	data = page_data(page);
	ASSERT_STREQ(get_str(data, "kind"), "diff");
	sites = json_get(doc, "sites");
	psites = json_get(data, "sites");
	ASSERT_EQ(psites->len, sites->len);
	for (size_t i = 0; i < sites->len; i++) {
		const struct json *s = json_at(sites, i), *p = json_at(psites, i);
		double c = get_num(diff_change(s, "live"), "change_bytes");
		ASSERT_STREQ(get_str(p, "function"), get_str(s, "function"));
		ASSERT_EQ(json_path(p, "live.values")->len, 3);
		ASSERT_NEAR(json_at(json_at(json_path(p, "live.values"), 2), 0)->num, c, 1);
		ASSERT_EQ(get_bool(json_get(p, "live"), "significant"),
			  get_bool(diff_change(s, "live"), "significant"));
		gross += fabs(c);
	}
	/* node [parent, function, file, module, flags, dropped, live base, new, change, width] */
	root = json_at(json_path(data, "flame.nodes"), 0);
	ASSERT_EQ(json_at(root, 0)->num, -1);
	ASSERT_NEAR(json_at(root, 9)->num, gross, (double)sites->len);
	json_free(data);
	json_free(doc);
	free(page);

	/* A side that cannot be read: exit 2, and no page. */
	unlink(out);
	write_file(b, "not a profile", 13);
	leek_diff(&r, dir, (const char *[]){ "--format", "html", "-o", out, a, b, NULL });
	ASSERT_EQ(r.status, 2);
	ASSERT_EQ(count_files(dir, "d.html", ""), 0);
	proc_free(&r);
	tmp_dir_remove(dir);
}

/* Exact mode: every difference is a fact (p = 0), and no difference is none (p = 1). */
TEST(exact_mode)
{
	static const struct ev base[] = { { 10, 1, 100, 10 }, { 10, 2, 48, 5 }, { 20, 2, 0, 5 } };
	static const struct ev new[] = { { 10, 1, 100, 11 }, { 10, 2, 48, 6 }, { 20, 2, 0, 6 } };
	char dir[256], *a, *b;
	struct json *doc;
	struct proc r;

	tmp_dir(dir);
	a = build(dir, "a.lk", 1, base, 3);
	b = build(dir, "b.lk", 1, new, 3);
	doc = leek_diff_json(&r, dir, (const char *[]){ a, b, NULL });
	expect_change(diff_site(doc, site_of(1)), "live", 1000, 1100, true);
	ASSERT_EQ(get_num(diff_change(diff_site(doc, site_of(1)), "live"), "p_value"), 0);
	expect_change(diff_site(doc, site_of(2)), "live", 0, 0, false);
	expect_change(diff_site(doc, site_of(2)), "alloc", 240, 288, true);
	double lo, hi;
	get_ci95(diff_change(diff_site(doc, site_of(1)), "live"), "change_bytes", &lo, &hi);
	ASSERT_EQ(lo, 100);
	ASSERT_EQ(hi, 100);
	/* --by alloc ranks site 2 (48 more allocated) after site 1 (100 more). */
	json_free(doc);
	proc_free(&r);
	doc = leek_diff_json(&r, dir,
			     (const char *[]){ "--by", "alloc", "--top", "1", a, b, NULL });
	ASSERT_STREQ(get_str(doc, "figure"), "alloc");
	ASSERT_EQ(json_get(doc, "sites")->len, 1);
	ASSERT_EQ(get_u64(doc, "sites_total"), 2);
	ASSERT_STREQ(get_str(json_at(json_get(doc, "sites"), 0), "function"), site_of(1));
	json_free(doc);
	proc_free(&r);
	tmp_dir_remove(dir);
}

/* Each side several files, merged as --merge does: the base is a1 + a2, the new b. */
TEST(groups_merged)
{
	static const struct ev a1[] = { { 10, 1, 4096, 40 } }, a2[] = { { 10, 1, 4096, 60 } };
	static const struct ev b1[] = { { 10, 1, 4096, 100 }, { 10, 2, 4096, 80 } };
	char dir[256], *pa1, *pa2, *pb1;
	struct json *doc;
	struct proc r;

	tmp_dir(dir);
	pa1 = build(dir, "a1.lk", T, a1, 1);
	pa2 = build(dir, "a2.lk", T, a2, 1);
	pb1 = build(dir, "b1.lk", T, b1, 2);
	doc = leek_diff_json(&r, dir, (const char *[]){ "--base", pa1, "--base", pa2, pb1, NULL });
	ASSERT_EQ(json_path(doc, "base.processes")->len, 2);
	ASSERT_EQ(json_path(doc, "new.processes")->len, 1);
	expect_change(diff_site(doc, site_of(1)), "live", bytes(T, 4096, 100),
		      bytes(T, 4096, 100), false);
	expect_change(diff_site(doc, site_of(2)), "live", 0, bytes(T, 4096, 80), true);
	expect_change(doc, "live", bytes(T, 4096, 100), bytes(T, 4096, 180), true);
	json_free(doc);
	proc_free(&r);
	/* --focus keeps site 2's stack alone (its first frame), --ignore leaves it out. */
	doc = leek_diff_json(&r, dir,
			     (const char *[]){ "--focus", "^0x400080$", pa1, pb1, NULL });
	ASSERT_EQ(get_u64(doc, "sites_total"), 1);
	ASSERT_EQ(get_u64(doc, "stacks_filtered"), 2);
	json_free(doc);
	proc_free(&r);
	/* --min-share 40: site 1's change (60 samples more, of 180 on the larger side) is below
	 * 40%, site 2's (80) is not. */
	doc = leek_diff_json(&r, dir, (const char *[]){ "--min-share", "40", pa1, pb1, NULL });
	ASSERT_EQ(json_get(doc, "sites")->len, 1);
	ASSERT_STREQ(get_str(json_at(json_get(doc, "sites"), 0), "function"), site_of(2));
	json_free(doc);
	proc_free(&r);
	tmp_dir_remove(dir);
}

/* `leek report --format json --view inuse --at AT FILE`: each made-up site's live bytes. */
static void inuse_at(const char *dir, const char *at, const char *path, double live[NSTACKS + 1])
{
	const struct json *sites;
	struct json *doc = NULL;
	struct proc r;
	char err[256];

	leek_exec(&r, dir, NULL,
		  (const char *[]){ "report", "--format", "json", "--view", "inuse", "--at", at,
				    path, NULL },
		  60);
	ASSERT_EQ(r.status, 0);
	ASSERT_OK(json_parse(r.out, r.out_len, &doc, err, sizeof(err)));
	sites = json_get(doc, "sites");
	for (uint64_t k = 0; k <= NSTACKS; k++)
		live[k] = 0;
	for (size_t i = 0; i < sites->len; i++)
		for (uint64_t k = 1; k <= NSTACKS; k++)
			if (strcmp(get_str(json_at(sites, i), "function"), site_of(k)) == 0)
				live[k] = get_num(json_at(sites, i), "live_bytes");
	json_free(doc);
	proc_free(&r);
}

/* Two moments of one profile, 2000 and 6000 ns (times in ns since the start):
 *   1  100 blocks of 4 KiB from 1000 on; 30 of them freed at 3000 and 30 more allocated at 5000:
 *      turnover, no change (came 30, left 30: z = -1/2 / sqrt(60 (1-p)) < 0: p = 1)
 *   2  80 allocated at 4000: came 80, significant
 *   3  40 of 16 KiB at 1500, freed at 4500: left 40, vanished, significant
 *   4  20 allocated at 3500 and freed at 3600: allocated between, live at neither
 *   5  10 allocated at 8000, after the second moment
 * Each side's live bytes are `leek report inuse --at`'s at that moment, and the change their
 * difference; what was allocated between is 30, 80 and 20 blocks of sites 1, 2 and 4. */
TEST(two_moments)
{
	static const struct ev ev[] = {
		{ 1000, 1, 4096, 100 }, { 1500, 3, 16 * KiB, 40 }, { 3000, 1, 0, 30 },
		{ 3500, 4, 4096, 20 },  { 3600, 4, 0, 20 },        { 4000, 2, 4096, 80 },
		{ 4500, 3, 0, 40 },     { 5000, 1, 4096, 30 },     { 8000, 5, 4096, 10 },
	};
	static const bool want[6] = { [2] = true, [3] = true };
	static const uint64_t allocated[6] = { [1] = 30, [2] = 80, [4] = 20 };
	double at1[NSTACKS + 1], at2[NSTACKS + 1];
	char dir[256], *a;
	struct json *doc;
	struct proc r;

	tmp_dir(dir);
	a = build(dir, "a.lk", T, ev, sizeof(ev) / sizeof(ev[0]));
	inuse_at(dir, "2000ns", a, at1);
	inuse_at(dir, "6000ns", a, at2);
	ASSERT_NEAR(at1[1], bytes(T, 4096, 100), 1);
	ASSERT_NEAR(at2[2], bytes(T, 4096, 80), 1);
	doc = leek_diff_json(&r, dir,
			     (const char *[]){ "--from", "2000ns", "--to", "6us", a, NULL });
	ASSERT_STREQ(get_str(doc, "mode"), "moments");
	ASSERT_NEAR(get_num(doc, "from_s"), 2e-6, 1e-9);
	ASSERT_NEAR(get_num(doc, "at_s"), 6e-6, 1e-9);
	ASSERT_EQ(get_u64(doc, "sites_total"), 4); /* 5 has nothing in the window */
	ASSERT_EQ(get_u64(doc, "sites_significant"), 2);
	for (uint64_t k = 1; k <= 4; k++) {
		const struct json *s = diff_site(doc, site_of(k));
		ASSERT_TRUE(s != NULL);
		expect_change(s, "live", at1[k], at2[k], want[k]);
		ASSERT_NEAR(get_num(json_get(s, "allocated"), "bytes"),
			    bytes(T, 4096, allocated[k]), 1);
	}
	ASSERT_EQ(get_num(diff_change(diff_site(doc, site_of(1)), "live"), "p_value"), 1);
	ASSERT_TRUE(diff_site(doc, site_of(5)) == NULL);
	ASSERT_NEAR(get_num(json_get(doc, "allocated"), "bytes"), bytes(T, 4096, 130), 1);
	json_free(doc);
	proc_free(&r);

	/* --from alone: to the end, where site 5 came too; --to alone: from the start. */
	doc = leek_diff_json(&r, dir, (const char *[]){ "--from", "2000ns", a, NULL });
	ASSERT_TRUE(json_get(doc, "at_s")->type == JSON_NULL);
	expect_change(diff_site(doc, site_of(5)), "live", 0, bytes(T, 4096, 10), true);
	json_free(doc);
	proc_free(&r);
	doc = leek_diff_json(&r, dir, (const char *[]){ "--to", "2000ns", a, NULL });
	expect_change(diff_site(doc, site_of(1)), "live", 0, at1[1], true);
	json_free(doc);
	proc_free(&r);

	/* The text names the moments. */
	leek_diff(&r, dir, (const char *[]){ "--from", "2000ns", "--to", "6000ns", a, NULL });
	ASSERT_EQ(r.status, 0);
	ASSERT_CONTAINS(r.out, "== diff: live bytes at 2 us and at 6 us ==");
	ASSERT_CONTAINS(r.out, "allocated    between: ");
	proc_free(&r);
	tmp_dir_remove(dir);
}

/* ---- input that is not right ---- */

static struct proc res;

static void expect_file_error(const char *what, const char *need)
{
	if (res.status != 2 || !strstr(res.err, need))
		FAIL("%s: expected exit 2 and \"%s\" on stderr; got exit %d, stderr:\n%s", what,
		     need, res.status, res.err);
	/* A diff without one of its files would pass for the real one: nothing instead. */
	if (res.out_len)
		FAIL("%s: exit 2, but stdout has %zu bytes:\n%.2000s", what, res.out_len, res.out);
}

static void diff3(const char *dir, const char *x, const char *y, const char *z)
{
	proc_free(&res);
	leek_diff(&res, dir, (const char *[]){ x, y, z, NULL });
}

/* A profile cut inside a record, or with a record's tag damaged, on either side and in either
 * mode: exit 2 and the damaged record's offset, as `leek report` says it (test-report-input.c). */
TEST(damaged_profiles)
{
	static const struct ev ev[] = { { 10, 1, 4096, 10 } };
	char dir[256], path[300], what[96], offset[40], *good;
	struct pb_sample s;

	tmp_dir(dir);
	good = build(dir, "good.lk", T, ev, 1);
	pb_build_sample(&s);
	snprintf(path, sizeof(path), "%s/bad.lk", dir);
	for (size_t i = 0; i < s.nrec; i += 3) {
		size_t len = s.off[i + 1] - s.off[i], cut = s.off[i] + (len > 2 ? len / 2 : 1);
		uint8_t tag = s.b.p[s.off[i]];
		snprintf(offset, sizeof(offset), "offset %zu", s.off[i]);
		write_file(path, s.b.p, cut);
		snprintf(what, sizeof(what), "record %zu cut, as the base", i);
		diff3(dir, "--format=json", path, good);
		expect_file_error(what, offset);
		snprintf(what, sizeof(what), "record %zu cut, as the new side", i);
		diff3(dir, good, path, NULL);
		expect_file_error(what, offset);
		if (tag >= 0x80)
			continue;
		s.b.p[s.off[i]] ^= 0x40; /* a reserved tag */
		write_file(path, s.b.p, s.b.len);
		s.b.p[s.off[i]] = tag;
		snprintf(what, sizeof(what), "record %zu's tag damaged, two moments", i);
		diff3(dir, "--from=0", path, NULL);
		expect_file_error(what, offset);
	}
	free(s.b.p);

	/* Foreign, empty and missing files. */
	write_file(path, "name,bytes\nmain,4096\n", 21);
	diff3(dir, path, good, NULL);
	expect_file_error("a CSV file as the base", "not a leek profile");
	diff3(dir, good, leek_bin, NULL);
	expect_file_error("an ELF file as the new side", "not a leek profile");
	write_file(path, "", 0);
	diff3(dir, "--to=1s", path, NULL);
	expect_file_error("an empty file, two moments", path);
	diff3(dir, "/nonexistent/a.lk", good, NULL);
	expect_file_error("a missing file", "/nonexistent/a.lk");
	/* Both sides bad: each is named. */
	diff3(dir, "/nonexistent/a.lk", "/nonexistent/b.lk", NULL);
	expect_file_error("two missing files", "/nonexistent/b.lk");
	ASSERT_CONTAINS(res.err, "/nonexistent/a.lk");
	proc_free(&res);
	tmp_dir_remove(dir);
}

/* Command lines that make no diff: exit 1, a message, nothing on stdout. */
TEST(usage_errors)
{
	static const char *const bad[][6] = {
		{ "a.lk" },                                   /* one profile */
		{ "a.lk", "b.lk", "c.lk" },                   /* three, without --base */
		{ "--from", "1s", "--base", "a.lk", "b.lk" }, /* moments and --base */
		{ "--from", "1s", "--at", "peak", "a.lk" },   /* moments and --at */
		{ "--at", "soon", "a.lk", "b.lk" },
		{ "--by", "size", "a.lk", "b.lk" },
		{ "--by", "alloc", "--from", "1s", "a.lk" },  /* allocated between is no change */
		{ "--from", "2s", "--to", "1s", "a.lk" },
		{ "--format", "xml", "a.lk", "b.lk" },
		{ "--format", "pprof", "a.lk", "b.lk" },     /* export's, not diff's */
		{ "--top", "many", "a.lk", "b.lk" },
		{ "--min-share", "200", "a.lk", "b.lk" },
		{ "--focus", "(", "a.lk", "b.lk" },
		{ "--alloc-fn", "(", "a.lk", "b.lk" },
		{ "--merge", "a.lk", "b.lk" },                /* each side is merged anyway */
		{ "--bogus", "a.lk", "b.lk" },
		{ NULL },                                     /* nothing at all */
	};
	char dir[256];

	tmp_dir(dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		proc_free(&res);
		leek_diff(&res, dir, bad[i]);
		if (res.status != 1 || !*res.err || res.out_len)
			FAIL("leek diff %s %s %s: exit %d, stdout %zu bytes, stderr:\n%s",
			     bad[i][0] ? bad[i][0] : "", bad[i][1] ? bad[i][1] : "",
			     bad[i][1] && bad[i][2] ? bad[i][2] : "", res.status, res.out_len,
			     res.err);
	}
	proc_free(&res);
	leek_diff(&res, dir, (const char *[]){ "--help", NULL });
	ASSERT_EQ(res.status, 0);
	ASSERT_CONTAINS(res.out, "usage: leek diff");
	proc_free(&res);
	tmp_dir_remove(dir);
}
