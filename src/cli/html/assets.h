/* assets.h: the files the HTML report writes into every page, compiled into leek by
 * embed-assets.py (src/cli/html/meson.build): the page's own skeleton, code and style (page/)
 * and the vendored libraries (third_party/). None holds "</script", "</style" or "<!--": the
 * build checks. Each has its length and its SHA-256 in base64, for the page's
 * Content-Security-Policy.
 */
#ifndef LEEK_ASSETS_H
#define LEEK_ASSETS_H

#include <stddef.h>

#define LK_ASSET(name)                                                                             \
	extern const unsigned char lk_asset_##name[];                                              \
	extern const size_t lk_asset_##name##_len;                                                 \
	extern const char lk_asset_##name##_sha256[]

LK_ASSET(page_html);   /* page/page.html: the body's skeleton */
LK_ASSET(page_css);    /* page/page.css */
LK_ASSET(page_js);     /* page/page.js: reads the data, draws the page */
LK_ASSET(d3_js);       /* third_party/d3 */
LK_ASSET(flame_js);    /* third_party/d3-flame-graph */
LK_ASSET(uplot_js);    /* third_party/uplot */
LK_ASSET(uplot_css);

#endif /* LEEK_ASSETS_H */
