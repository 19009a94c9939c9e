#include "export.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export_csv.h"
#include "export_memviz.h"
#include "export_perfetto.h"

enum format { FORMAT_NONE, FORMAT_PERFETTO, FORMAT_MEMVIZ, FORMAT_CSV };

static int usage(void)
{
    fprintf(stderr, "usage: memshim-analyze export --format perfetto|memory-viz|csv [-o FILE] "
                    "[--resolution-us N (perfetto)] TRACE...\n");
    return 2;
}

static enum format parse_format(const char *s)
{
    if (strcmp(s, "perfetto") == 0 || strcmp(s, "chrome") == 0)
        return FORMAT_PERFETTO;
    if (strcmp(s, "memory-viz") == 0 || strcmp(s, "memviz") == 0 || strcmp(s, "pickle") == 0)
        return FORMAT_MEMVIZ;
    if (strcmp(s, "csv") == 0)
        return FORMAT_CSV;
    return FORMAT_NONE;
}

static int run(enum format format, const struct cli_traces *t, uint64_t resolution_ns, FILE *out,
               char *err, size_t errlen)
{
    if (format == FORMAT_PERFETTO)
        return export_perfetto(t->paths, t->count, resolution_ns, out, err, errlen);
    if (t->count != 1) {
        snprintf(err, errlen, "%s export takes one trace (%zu given)",
                 format == FORMAT_CSV ? "csv" : "memory-viz", t->count);
        return -1;
    }
    if (format == FORMAT_MEMVIZ)
        return export_memviz(t->paths[0], out, err, errlen);
    return export_csv(t->paths[0], out, 1, err, errlen) < 0 ? -1 : 0;
}

int export_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"resolution-us", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'H'},
        {0, 0, 0, 0},
    };
    enum format format = FORMAT_NONE;
    const char *output = NULL;
    uint64_t resolution_ns = 0;
    int c;
    while ((c = getopt_long(argc, argv, "f:o:", options, NULL)) != -1) {
        if (c == 'f' && (format = parse_format(optarg)) != FORMAT_NONE)
            continue;
        if (c == 'H')
            return CLI_EXIT_HELP;
        if (c == 'o') {
            output = optarg;
            continue;
        }
        if (c == 'r') {
            resolution_ns = (uint64_t)(strtod(optarg, NULL) * 1000);
            continue;
        }
        return usage();
    }
    if (format == FORMAT_NONE)
        return usage();
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    /* refused before the output exists, so that a refusal leaves no empty file behind */
    if (format != FORMAT_PERFETTO && traces.count != 1) {
        fprintf(stderr,
                "memshim-analyze export: %s export takes one trace (%zu given); perfetto takes "
                "several\n",
                format == FORMAT_CSV ? "csv" : "memory-viz", traces.count);
        cli_traces_free(&traces);
        return 2;
    }
    char err[256] = "";
    int rc = -1;
    FILE *out = cli_output(output);
    if (out) {
        rc = run(format, &traces, resolution_ns, out, err, sizeof err);
        if (cli_output_close(out, output) != 0)
            rc = -1;
    }
    if (rc != 0 && *err)
        fprintf(stderr, "memshim-analyze export: %s\n", err);
    if (rc != 0 && out)
        cli_output_discard(output);
    cli_traces_free(&traces);
    return rc == 0 ? 0 : 1;
}
