/* report-sections.h: the one driver of the `leek report` subcommands that print a section for each
 * profile, one after the other (`report frees`, `report errors`): what differs between them is a
 * table of callbacks, struct lk_report_kind; cmd-report-sections.c does the rest.
 *
 * The driver parses the options (the kind's own, then --format text|json, --output, --help, the
 * input options and the site options; --merge is refused, each profile being its own section),
 * opens one symbolizer for every file, and for each file: loads it, makes its section, prints it
 * (text sections apart by an empty line; JSON, one document around them all) and frees both. A
 * file that cannot be read or reported gets one line and exit status 2; the other files are still
 * reported. Never exits.
 */
#ifndef LEEK_REPORT_SECTIONS_H
#define LEEK_REPORT_SECTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "input.h"
#include "json-write.h"
#include "profile.h"

struct lk_report_kind {
	const char *name; /* "frees": "report frees: ..." in its messages */
	/* Its own options, ending with an empty entry (NULL: none), and their handler: LK_EXIT_OK,
	 * or LK_EXIT_USAGE after saying why. */
	const struct option *options;
	int (*option)(int c, const char *arg);
	/* How each file is loaded: the driver's (every moment, no list of live blocks) changed. */
	void (*profile_opts)(struct lk_profile_opts *po);
	bool trailer_optional; /* no warning for a profile without a trailer */
	/* The section of profile p as profile `index` in sym: 0, or a negative errno (-E2BIG:
	 * beyond the memory budget). format: what it will be printed as. */
	int (*section_new)(const char *path, const struct lk_profile *p, struct lk_symbolizer *sym,
			   uint32_t index, const struct lk_input *in, enum lk_input_format format,
			   void **ret);
	void (*section_free)(void *s);
	void (*text)(FILE *f, const void *s, bool stacks);
	void (*json_begin)(struct lk_json *j, FILE *f, const struct lk_input *in,
			   enum lk_input_format format);
	void (*json)(struct lk_json *j, const void *s);
	void (*json_end)(struct lk_json *j);
};

/* `leek report KIND [OPTIONS] FILE...`, argv from KIND on; returns the exit status. */
int lk_report_sections(int argc, char *argv[], const struct lk_report_kind *kind);

#endif /* LEEK_REPORT_SECTIONS_H */
