/* What the `whatif --svg` sweep chart adds to the three traffic curves: the `recompute` variant
 * (bytes it still moves; its FLOPs in the hover text) and the `auto` policy (bytes it spills;
 * its drops and FLOPs in the hover text) as dashed curves; every point where a policy runs out
 * of memory (the shim's and auto's failures) as a red cross on that curve; and the ceilings
 * below the smallest workable one, where no policy can run, shaded grey. */
#ifndef ANALYZE_WHATIF_SVG_MARKS_H
#define ANALYZE_WHATIF_SVG_MARKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "whatif.h"

/* The chart's plot area and scales, as write_svg laid them out. */
struct whatif_svg_frame {
    double left, top, pw, ph;  /* plot area */
    uint64_t xmin, xmax;       /* ceilings at the left and right edges */
    double ytop;               /* bytes at the top edge */
    double legend_x, legend_y; /* where the next legend entry goes */
};

/* Highest bytes the added curves reach, so that the y axis covers them. */
uint64_t whatif_svg_marks_max(const struct whatif_result *pts, size_t n);

/* Draws the additions over a chart of `n` points (pts[0] the highest ceiling). */
void whatif_svg_marks(FILE *out, const struct whatif_result *pts, size_t n,
                      const struct whatif_svg_frame *f);

#endif /* ANALYZE_WHATIF_SVG_MARKS_H */
