/* The command table of memshim-analyze.
 *
 * To add a command: include its header below and add one line to `commands[]`, before the
 * NULL entry; keep the entries in the order `memshim-analyze --help` should list them. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dump.h"
#include "summary.h"
#include "diff.h"
#include "export.h"
#include "timeline.h"
#include "estimate.h"
#include "whatif.h"

const struct command commands[] = {
    {"summary", "[--json] [--no-refine] [--top N] [--frames N] [--config FILE] TRACE|DIR...",
     "peak, breakdown by category, steps, sites, leaks, OOMs (several traces: per rank, or per "
     "label for runs of different settings, beside the estimate of --config)",
     summary_command},
    {"dump", "[--offsets] [--refined] TRACE...", "every record, one line each", dump_command},
    {"timeline", "[--x time|step] [--width PX] [--height PX] TRACE|DIR... -o FILE.svg|.html",
     "resident memory by category over time, as SVG (or HTML with the top sites)",
     timeline_command},
    {"export", "--format perfetto|memory-viz|csv [-o FILE] [--resolution-us N] TRACE...",
     "Perfetto/Chrome trace JSON, PyTorch memory_viz pickle, or one CSV row per event",
     export_command},
    {"diff", "[--json] [--top N] A B", "two traces side by side, by category and by call site",
     diff_command},
    {"estimate",
     "[--config FILE] [--KEY VALUE]... [--gpu SIZE] [--tokens N] [--json] [--trace T] | --table "
     "[--strategies L] [--micro-batches L] [--seq-lens L] [--csv|--json]",
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

int commands_help(const char *name)
{
    const struct command *c = commands_find(name);
    if (c)
        printf("usage: memshim-analyze %s %s\n\n%s.\nA directory stands for every *.mst trace in "
               "it.\n",
               c->name, c->usage, c->help);
    return 0;
}

int commands_run(int argc, char **argv)
{
    const struct command *c = argc > 0 ? commands_find(argv[0]) : NULL;
    if (!c)
        return 2;
    int rc = c->run(argc, argv);
    return rc == CLI_EXIT_HELP ? commands_help(c->name) : rc;
}

const struct command *commands_find(const char *name)
{
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
