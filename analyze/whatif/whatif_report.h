/* whatif_report: the whatif command's text tables and JSON, from replay results. */
#ifndef ANALYZE_WHATIF_REPORT_H
#define ANALYZE_WHATIF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"
#include "whatif.h"

/* The rates the times are computed at. */
struct whatif_rates {
    double link; /* bytes/s each way */
    double gemm; /* FLOP/s */
    const char *gemm_source;
    uint64_t auto_h2d, auto_d2h, auto_gemm; /* the auto policy's (whatif_info) */
};

void whatif_report_header(FILE *out, const struct whatif_info *in, const struct whatif_rates *r);
/* One row per result (ceiling). */
void whatif_report_totals(FILE *out, const struct whatif_result *res, size_t n,
                          const struct whatif_rates *r);
/* One row per step slot of a result. */
void whatif_report_steps(FILE *out, const struct whatif_result *x);
void whatif_report_json_info(struct json *j, const struct whatif_info *in,
                             const struct whatif_rates *r);
/* steps: with the per-step rows. */
void whatif_report_json_result(struct json *j, const struct whatif_result *x,
                               const struct whatif_rates *r, int steps);

/* The sweep as an SVG chart: traffic by policy against the ceiling. */
void whatif_chart_svg(FILE *out, const struct whatif_result *pts, size_t n,
                      const struct whatif_info *in);

#endif /* ANALYZE_WHATIF_REPORT_H */
