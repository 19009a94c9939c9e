/* The whatif sweep chart's additions: recompute and auto curves, out-of-memory crosses where a
 * policy fails, and the unworkable range below the smallest workable ceiling. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif_svg_marks.h"

static size_t count(const char *s, const char *what)
{
    size_t n = 0, k = strlen(what);
    for (size_t i = 0; s[i]; i++)
        n += strncmp(s + i, what, k) == 0;
    return n;
}

static char *draw(const struct whatif_result *pts, size_t n, const struct whatif_svg_frame *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    whatif_svg_marks(out, pts, n, f);
    fclose(out);
    return buf;
}

/* Five ceilings, 100..20 MB: the two lowest cannot run at all, the shim fails twice at 60 MB
 * and auto once at 60 MB; recompute and auto move some bytes at every workable point. */
Test(whatif_svg, marks)
{
    struct whatif_result pts[5];
    memset(pts, 0, sizeof pts);
    for (int i = 0; i < 5; i++) {
        pts[i].limit = (uint64_t)(100 - 20 * i) * 1000000;
        pts[i].feasible = i < 3;
        pts[i].have_shim = 1;
        pts[i].r.moved_bytes = (uint64_t)i * 1000000;
        pts[i].r.flops = (uint64_t)i * 1000000000;
        pts[i].a.t.d2h = pts[i].a.t.h2d = (uint64_t)i * 500000;
    }
    pts[2].t[WHATIF_SHIM].failures = 2;
    pts[2].t[WHATIF_SHIM].d2h = 3000000;
    pts[2].a.t.failures = 1;
    struct whatif_svg_frame f = {.left = 90,
                                 .top = 40,
                                 .pw = 640,
                                 .ph = 380,
                                 .xmin = 20000000,
                                 .xmax = 100000000,
                                 .ytop = 4000000,
                                 .legend_x = 742,
                                 .legend_y = 110};
    char *svg = draw(pts, 5, &f);
    cr_expect_eq(count(svg, "class=\"oom\""), 2 + 2, "shim and auto at 60 MB, two unworkable");
    cr_expect(strstr(svg, "shim policy at a 57.2 MiB ceiling: 2 allocations fail"), "%s", svg);
    cr_expect(strstr(svg, "auto at a 57.2 MiB ceiling: 1 allocation fail"), "%s", svg);
    cr_expect_eq(count(svg, "class=\"unworkable\""), 1);
    /* shaded from the left edge to halfway between 40 MB (unworkable) and 60 MB (workable) */
    double x40 = 90 + 640 * 20.0 / 80, x60 = 90 + 640 * 40.0 / 80;
    char rect[96];
    snprintf(rect, sizeof rect, "<rect x=\"90.0\" y=\"40.0\" width=\"%.1f\"", (x40 + x60) / 2 - 90);
    cr_expect(strstr(svg, rect), "%s in %s", rect, svg);
    cr_expect_eq(count(svg, "class=\"recompute\""), 3, "one per workable point");
    cr_expect_eq(count(svg, "class=\"auto\""), 3);
    cr_expect(strstr(svg, "recompute at 57.2 MiB: 0 replays, 2 GFLOP, 2000000 bytes still moved"),
              "%s", svg);
    cr_expect(strstr(svg, "recompute (moved)") && strstr(svg, "auto (spilled)") &&
                  strstr(svg, "out of memory"),
              "legend");
    cr_expect_eq(whatif_svg_marks_max(pts, 5), 2000000, "unworkable points do not scale the axis");
    free(svg);

    /* Without the shim's victim module: no auto curve, no auto points. */
    for (int i = 0; i < 5; i++)
        pts[i].have_shim = 0;
    svg = draw(pts, 5, &f);
    cr_expect_eq(count(svg, "class=\"auto\""), 0);
    cr_expect(!strstr(svg, "auto (spilled)"));
    free(svg);
}
