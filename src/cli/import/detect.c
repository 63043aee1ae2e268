/* detect.c: which format a trace is in, from its first non-empty lines.
 *
 * Each line votes for the parsers that take it as a record (mtrace.c, kdump.c): a line either
 * parser calls malformed votes for neither. The format with more votes wins, if it has at least
 * a quarter of the lines, so that a trace that starts with a few damaged lines is still recognized
 * and a file that is neither is refused rather than read as a trace full of malformed lines. A
 * kdump line never parses as mtrace (it starts with a number) and an mtrace line never as kdump
 * (no record type), so a tie can only be between lines that neither takes.
 *
 * Never: read the input itself (lines.c keeps the lines it looked at).
 */
#include <errno.h>
#include <string.h>

#include "import.h"

int lk_import_detect(const char *const *lines, size_t n, enum lk_import_format *ret)
{
	size_t mtrace = 0, kdump = 0;
	struct lk_import_rec rec;
	const char *why;

	if (n == 0) {
		*ret = LK_IMPORT_MTRACE;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(lines[i]);
		mtrace += lk_mtrace_parse(lines[i], len, &rec, &why) > 0;
		/* kdump's other records count too: a trace may start with execve and rtld. */
		kdump += lk_kdump_parse(lines[i], len, &rec, &why) >= 0 && lines[i][0] != '\t' &&
		         strspn(lines[i], " ") < len && lines[i][strspn(lines[i], " ")] >= '0' &&
		         lines[i][strspn(lines[i], " ")] <= '9';
	}
	if (mtrace > kdump && 4 * mtrace >= n) {
		*ret = LK_IMPORT_MTRACE;
		return 0;
	}
	if (kdump > mtrace && 4 * kdump >= n) {
		*ret = LK_IMPORT_KDUMP;
		return 0;
	}
	return -EINVAL;
}

const char *lk_import_format_name(enum lk_import_format f)
{
	return f == LK_IMPORT_MTRACE ? "mtrace" : f == LK_IMPORT_KDUMP ? "kdump" : "auto";
}
