/* screen.h: `leek top`'s full-screen view (screen.c, ncursesw), drawn from one live view at a
 * time (live.h); cmd-top.c reads the profile and the keys.
 */
#ifndef LEEK_SCREEN_H
#define LEEK_SCREEN_H

#include <stdbool.h>
#include <stddef.h>

#include "live.h"

enum lk_screen_sort { LK_SORT_LIVE, LK_SORT_ALLOC, LK_SORT_GROWTH };

struct lk_screen_state {
	const struct lk_live_view *view; /* LK_LIVE_ALL: every live site */
	const char *path;
	enum lk_screen_sort sort;
	size_t selected;                 /* the selected row, in the sorted order */
	bool show_stack;                 /* the selected site's stack under it */
};

struct lk_screen;
/* Takes the terminal (initscr): 0, -ENOTTY if it cannot, -ENOMEM. */
int lk_screen_open(bool ascii, struct lk_screen **ret);
void lk_screen_draw(struct lk_screen *s, const struct lk_screen_state *st);
size_t lk_screen_sites(const struct lk_screen *s); /* rows drawn last time */
void lk_screen_close(struct lk_screen *s);         /* gives the terminal back; NULL-safe */

#endif /* LEEK_SCREEN_H */
