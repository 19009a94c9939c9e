/* The command table of memshim-analyze.
 *
 * To add a command: include its header below and add one line to `commands[]`, before the
 * NULL entry. Each area owns its own lines (viz: timeline, export, diff); keep the entries in
 * the order `memshim-analyze --help` should list them. */
#include "commands.h"

#include <string.h>

#include "dump.h"
#include "summary.h"
/* viz: include the headers of timeline/export/diff commands here. */
#include "diff.h"
#include "export.h"
#include "timeline.h"
#include "estimate.h"
#include "whatif.h"

const struct command commands[] = {
    {"summary", "[--json] [--no-refine] [--top N] [--frames N] TRACE|DIR...",
     "peak, breakdown by category, steps, sites, leaks, OOMs (several traces: per rank)",
     summary_command},
    {"dump", "[--offsets] [--refined] TRACE...", "every record, one line each", dump_command},
    /* viz: add the timeline, export and diff entries here. */
    {"timeline", "[--x time|step] [--width PX] [--height PX] TRACE|DIR... -o FILE.svg|.html",
     "resident memory by category over time, as SVG (or HTML with the top sites)",
     timeline_command},
    {"export", "--format perfetto|memory-viz|csv [-o FILE] [--resolution-us N] TRACE...",
     "Perfetto/Chrome trace JSON, PyTorch memory_viz pickle, or one CSV row per event",
     export_command},
    {"diff", "[--json] [--top N] A B", "two traces side by side, by category and by call site",
     diff_command},
    {"estimate", "[--config FILE] [--KEY VALUE]... [--gpu SIZE] [--tokens N] [--json] [--trace T]",
     "analytic memory of one GPU by category (ZeRO, Korthikanti et al.), beside a measurement",
     estimate_command},
    {"whatif",
     "--limit SIZE[,SIZE...] | --sweep[=N] [--svg F] [--link-gbps G] [--tflops T] "
     "[--costs h2d=R,d2h=R,gemm=R] [--json] TRACE|DIR...",
     "bytes to move (MIN, LRU, the shim's and the auto policy) or FLOPs to recompute under "
     "smaller ceilings",
     whatif_command},
    {NULL, NULL, NULL, NULL},
};

const struct command *commands_find(const char *name)
{
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
