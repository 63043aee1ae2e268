/* assets.h: the files the HTML pages are made of (page.c), compiled into leek by
 * embed-assets.py (src/cli/html/meson.build): the pages' own skeletons, code and style (page/)
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

LK_ASSET(page_css);    /* page/page.css: the pages' own style */
LK_ASSET(common_js);   /* page/common.js: what the pages' code shares */
LK_ASSET(report_html); /* page/report.html: the report's skeleton */
LK_ASSET(report_js);   /* page/report.js: reads the report's data, draws its page */
LK_ASSET(diff_html);   /* page/diff.html, diff.js: the diff's */
LK_ASSET(diff_js);
LK_ASSET(d3_js);       /* third_party/d3 */
LK_ASSET(flame_js);    /* third_party/d3-flame-graph */
LK_ASSET(uplot_js);    /* third_party/uplot */
LK_ASSET(uplot_css);

#endif /* LEEK_ASSETS_H */
