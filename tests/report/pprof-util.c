/* pprof-util.c: `go tool pprof` and protobuf-c on leek's pprof exports (see pprof-util.h).
 *
 * The -raw parser follows google/pprof's Profile.String() (profile/profile.go): "Comment: ",
 * "PeriodType: ", "Period: ", "Time: ", "Samples:" and its header, one line per sample (and one
 * of labels under it), "Locations" (a location's first line "ID: ADDR M=MAPPING NAME FILE:LINE
 * s=START", more lines for its inlined functions), "Mappings". A name may hold spaces: a line is
 * read from its end, so only file names with spaces would be misread (the tests have none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "files.h"
#include "harness.h"
#include "pprof-util.h"
#include "profile.pb-c.h"

const char *go_path(void)
{
	static char found[512];
	const char *path = getenv("PATH");

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		if (n && n + 4 < sizeof(found)) {
			snprintf(found, sizeof(found), "%.*s/go", (int)n, path);
			if (access(found, X_OK) == 0)
				return found;
		}
		path += n + (path[n] == ':');
	}
	return NULL;
}

const char *need_go(void)
{
	const char *go = go_path();

	if (!go)
		SKIP("no go in PATH to read the export with `go tool pprof` (Debian: golang-go)");
	return go;
}

void go_pprof(struct proc *p, const char *dir, const char *const *args)
{
	const char *argv[32] = { need_go(), "tool", "pprof" };
	size_t n = 3;

	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
			FAIL("too many arguments for go tool pprof");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	proc_run(p, dir, argv, (const char *const[]){ "TZ=UTC", NULL }, 120);
	if (p->status != 0)
		FAIL("go tool pprof exited %d; stderr:\n%s", p->status, p->err);
}

static char *dup_or_fail(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (!d)
		FAIL("out of memory");
	return d;
}

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n + 1) * size);

	if (!q)
		FAIL("out of memory");
	return q;
}

/* "NAME FILE:LINE s=START" or "... s=START(SYSTEM_NAME)", read from its end. */
static void parse_line(const char *s, struct pprof_line *l)
{
	const char *sp = strstr(s, " s="), *colon, *space, *sys;

	memset(l, 0, sizeof(*l));
	if (!sp)
		FAIL("no \" s=\" in a location line: \"%s\"", s);
	for (const char *x = sp; (x = strstr(x + 1, " s=")); sp = x)
		;
	sys = strchr(sp, '(');
	if (sys)
		l->system_name = dup_or_fail(sys + 1, strlen(sys + 1) - (sys[strlen(sys) - 1] == ')'));
	for (colon = sp; colon > s && *colon != ':'; colon--)
		;
	for (space = colon; space > s && *space != ' '; space--)
		;
	if (*colon != ':' || *space != ' ')
		FAIL("no \"NAME FILE:LINE\" in a location line: \"%s\"", s);
	l->line = strtol(colon + 1, NULL, 10);
	l->file = dup_or_fail(space + 1, (size_t)(colon - space - 1));
	l->function = dup_or_fail(s, (size_t)(space - s));
}

static void parse_location(struct pprof_raw *r, const char *line)
{
	struct pprof_location *loc;
	char *end;

	if (line[0] == ' ' && strspn(line, " ") == 13) { /* an inlined function's line */
		if (!r->nlocs)
			FAIL("a location's second line before any location");
		loc = &r->locs[r->nlocs - 1];
		loc->lines = grow(loc->lines, loc->nlines, sizeof(*loc->lines));
		parse_line(line + 13, &loc->lines[loc->nlines++]);
		return;
	}
	r->locs = grow(r->locs, r->nlocs, sizeof(*r->locs));
	loc = &r->locs[r->nlocs++];
	memset(loc, 0, sizeof(*loc));
	loc->id = strtoull(line, &end, 10);
	if (*end != ':')
		FAIL("not a location line: \"%s\"", line);
	loc->address = strtoull(end + 1, &end, 16);
	while (*end == ' ')
		end++;
	if (!strncmp(end, "M=", 2)) {
		loc->mapping = strtoull(end + 2, &end, 10);
		end++;
	}
	if (*end) {
		loc->lines = grow(NULL, 0, sizeof(*loc->lines));
		parse_line(end, &loc->lines[loc->nlines++]);
	}
}

/* "ID: START/LIMIT/OFFSET FILE BUILDID FLAGS", each of the last three maybe empty (a space
 * still before it); none holds a space in the tests. */
static void parse_mapping(struct pprof_raw *r, const char *line)
{
	struct pprof_mapping *m;
	char file[1024] = "", id[256] = "", flags[64] = "";
	unsigned long long mid, start, limit, offset;
	int n = 0;

	r->maps = grow(r->maps, r->nmaps, sizeof(*r->maps));
	m = &r->maps[r->nmaps++];
	if (sscanf(line, "%llu: %llx/%llx/%llx %n", &mid, &start, &limit, &offset, &n) != 4 || !n)
		FAIL("not a mapping line: \"%s\"", line);
	const char *f = strchr(line, '/'); /* after START: the first space after LIMIT/OFFSET */
	f = strchr(f, ' ') + 1;
	const char *b = strchr(f, ' ') ? strchr(f, ' ') + 1 : f + strlen(f);
	const char *g = strchr(b, ' ') ? strchr(b, ' ') + 1 : b + strlen(b);
	snprintf(file, sizeof(file), "%.*s", (int)strcspn(f, " "), f);
	snprintf(id, sizeof(id), "%.*s", (int)strcspn(b, " "), b);
	snprintf(flags, sizeof(flags), "%s", g);
	*m = (struct pprof_mapping){ mid, start, limit, offset, dup_or_fail(file, strlen(file)),
				     dup_or_fail(id, strlen(id)), dup_or_fail(flags, strlen(flags)) };
}

static void parse_sample(struct pprof_raw *r, const char *line)
{
	struct pprof_sample *s;
	const char *colon = strchr(line, ':');
	char *end;

	if (strspn(line, " ") >= 16 && strstr(line, "pprof::base:[true]")) {
		if (!r->nsamples)
			FAIL("labels before any sample");
		r->samples[r->nsamples - 1].base = true;
		return;
	}
	if (!colon)
		FAIL("not a sample line: \"%s\"", line);
	r->samples = grow(r->samples, r->nsamples, sizeof(*r->samples));
	s = &r->samples[r->nsamples++];
	memset(s, 0, sizeof(*s));
	end = (char *)line;
	for (int i = 0; i < PPROF_VALUES; i++)
		s->v[i] = strtoll(end, &end, 10);
	if (end != colon)
		FAIL("not %d values before ':' in \"%s\"", PPROF_VALUES, line);
	for (end = (char *)colon + 1; *end;) {
		char *next;
		uint64_t id = strtoull(end, &next, 10);
		if (next == end)
			break;
		s->locs = grow(s->locs, s->nlocs, sizeof(*s->locs));
		s->locs[s->nlocs++] = id;
		end = next;
	}
}

void pprof_raw(const char *dir, const char *file, const char *const *extra, struct pprof_raw *r)
{
	const char *args[16] = { "-raw" };
	size_t n = 1;
	enum { HEAD, TYPES, SAMPLES, LOCATIONS, MAPPINGS } part = HEAD;
	struct proc p;
	char *line, *save = NULL;

	for (size_t i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n++] = file;
	args[n] = NULL;
	go_pprof(&p, dir, args);
	memset(r, 0, sizeof(*r));
	r->dflt = -1;
	r->text = dup_or_fail(p.out, p.out_len);
	char *copy = dup_or_fail(p.out, p.out_len);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (part == HEAD && !strncmp(line, "Comment: ", 9)) {
			r->comments = grow(r->comments, r->ncomments, sizeof(*r->comments));
			r->comments[r->ncomments++] = dup_or_fail(line + 9, strlen(line + 9));
		} else if (part == HEAD && !strncmp(line, "PeriodType: ", 12))
			r->period_type = dup_or_fail(line + 12, strlen(line + 12));
		else if (part == HEAD && !strncmp(line, "Period: ", 8))
			r->period = strtoll(line + 8, NULL, 10);
		else if (part == HEAD && !strncmp(line, "Time: ", 6))
			r->time = dup_or_fail(line + 6, strlen(line + 6));
		else if (part == HEAD && !strcmp(line, "Samples:"))
			part = TYPES;
		else if (part == TYPES) {
			char *tsave = NULL;
			for (char *t = strtok_r(line, " ", &tsave); t && r->ntypes < PPROF_VALUES;
			     t = strtok_r(NULL, " ", &tsave)) {
				char *d = strstr(t, "[dflt]");
				if (d) {
					*d = 0;
					r->dflt = (int)r->ntypes;
				}
				r->types[r->ntypes++] = dup_or_fail(t, strlen(t));
			}
			part = SAMPLES;
		} else if (!strcmp(line, "Locations"))
			part = LOCATIONS;
		else if (!strcmp(line, "Mappings"))
			part = MAPPINGS;
		else if (part == SAMPLES)
			parse_sample(r, line);
		else if (part == LOCATIONS)
			parse_location(r, line);
		else if (part == MAPPINGS)
			parse_mapping(r, line);
	}
	free(copy);
	if (part != MAPPINGS || r->ntypes != PPROF_VALUES)
		FAIL("go tool pprof -raw %s: not the expected parts (%zu sample types):\n%s", file,
		     r->ntypes, r->text);
	proc_free(&p);
}

void pprof_raw_free(struct pprof_raw *r)
{
	for (size_t i = 0; i < r->ncomments; i++)
		free(r->comments[i]);
	for (size_t i = 0; i < r->ntypes; i++)
		free(r->types[i]);
	for (size_t i = 0; i < r->nsamples; i++)
		free(r->samples[i].locs);
	for (size_t i = 0; i < r->nlocs; i++) {
		for (size_t j = 0; j < r->locs[i].nlines; j++) {
			free(r->locs[i].lines[j].function);
			free(r->locs[i].lines[j].system_name);
			free(r->locs[i].lines[j].file);
		}
		free(r->locs[i].lines);
	}
	for (size_t i = 0; i < r->nmaps; i++) {
		free(r->maps[i].file);
		free(r->maps[i].build_id);
		free(r->maps[i].flags);
	}
	free(r->comments);
	free(r->samples);
	free(r->locs);
	free(r->maps);
	free(r->period_type);
	free(r->time);
	free(r->text);
	memset(r, 0, sizeof(*r));
}

int64_t pprof_raw_sum(const struct pprof_raw *r, int i)
{
	int64_t sum = 0;

	for (size_t k = 0; k < r->nsamples; k++)
		sum += r->samples[k].v[i];
	return sum;
}

const struct pprof_location *pprof_location(const struct pprof_raw *r, uint64_t id)
{
	for (size_t i = 0; i < r->nlocs; i++)
		if (r->locs[i].id == id)
			return &r->locs[i];
	FAIL("no location %llu", (unsigned long long)id);
}

const struct pprof_mapping *pprof_mapping(const struct pprof_raw *r, uint64_t id)
{
	for (size_t i = 0; i < r->nmaps; i++)
		if (r->maps[i].id == id)
			return &r->maps[i];
	FAIL("no mapping %llu", (unsigned long long)id);
}

int64_t pprof_top_total(const char *dir, const char *file, const char *index)
{
	char si[64];
	bool bytes = strstr(index, "space") != NULL;
	struct proc p;
	const char *at;
	long long total;

	snprintf(si, sizeof(si), "-sample_index=%s", index);
	go_pprof(&p, dir,
		 (const char *const[]){ "-top", si, bytes ? "-unit=B" : "-nodecount=1", file, NULL });
	at = strstr(p.out, "% of ");
	if (!at || sscanf(at + 5, "%lld", &total) != 1)
		FAIL("go tool pprof -top %s %s: no \"%% of T total\":\n%s", si, file, p.out);
	proc_free(&p);
	return total;
}

/* ---- protobuf-c ---- */

static bool index_ok(int64_t i, size_t n)
{
	return i >= 0 && (uint64_t)i < n;
}

void pprof_decode_header(const char *file, struct pprof_header *h)
{
	gzFile gz = gzopen(file, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int n;

	if (!gz)
		FAIL("cannot open %s", file);
	do {
		if (len + 65536 > cap && !(buf = realloc(buf, cap = 2 * cap + 65536)))
			FAIL("out of memory");
		n = gzread(gz, buf + len, 65536);
		len += n > 0 ? (size_t)n : 0;
	} while (n > 0);
	if (n < 0 || gzclose(gz) != Z_OK)
		FAIL("%s is not a whole gzip stream", file);
	Perftools__Profiles__Profile *m = perftools__profiles__profile__unpack(NULL, len, buf);
	if (!m)
		FAIL("%s: protobuf-c cannot unpack the profile", file);
	/* The message packed whole, as protobuf-c packs it: the same bytes as the file's, which
	 * leek writes a field at a time. */
	size_t size = perftools__profiles__profile__get_packed_size(m);
	uint8_t *whole = malloc(size ? size : 1);
	if (!whole)
		FAIL("out of memory");
	bool canonical = perftools__profiles__profile__pack(m, whole) == size && size == len &&
			 memcmp(whole, buf, len) == 0;
	free(whole);
	free(buf);
	size_t ns = m->n_string_table;
	bool ok = ns > 0 && m->string_table[0][0] == 0 && index_ok(m->default_sample_type, ns) &&
		  index_ok(m->drop_frames, ns) && index_ok(m->keep_frames, ns) && m->period_type &&
		  index_ok(m->period_type->type, ns) && index_ok(m->period_type->unit, ns);
	for (size_t i = 0; i < m->n_sample_type; i++)
		ok &= index_ok(m->sample_type[i]->type, ns) && index_ok(m->sample_type[i]->unit, ns);
	for (size_t i = 0; i < m->n_comment; i++)
		ok &= index_ok(m->comment[i], ns);
	for (size_t i = 0; i < m->n_mapping; i++)
		ok &= index_ok(m->mapping[i]->filename, ns) && index_ok(m->mapping[i]->build_id, ns);
	for (size_t i = 0; i < m->n_function; i++)
		ok &= index_ok(m->function[i]->name, ns) &&
		      index_ok(m->function[i]->system_name, ns) &&
		      index_ok(m->function[i]->filename, ns);
	for (size_t i = 0; i < m->n_sample; i++)
		for (size_t j = 0; j < m->sample[i]->n_label; j++)
			ok &= index_ok(m->sample[i]->label[j]->key, ns) &&
			      index_ok(m->sample[i]->label[j]->str, ns) &&
			      index_ok(m->sample[i]->label[j]->num_unit, ns);
	*h = (struct pprof_header){
		.time_nanos = m->time_nanos,
		.duration_nanos = m->duration_nanos,
		.period = m->period,
		.nstrings = ns,
		.strings_valid = ok,
		.canonical = canonical,
	};
	if (ok) {
		h->period_type = strdup(m->string_table[m->period_type->type]);
		h->period_unit = strdup(m->string_table[m->period_type->unit]);
		h->default_sample_type = strdup(m->string_table[m->default_sample_type]);
	}
	perftools__profiles__profile__free_unpacked(m, NULL);
}
