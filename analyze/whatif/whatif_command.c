/* whatif_command: `memshim-analyze whatif`: its options, the ceilings to replay, the output. */
#include "whatif.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "costs_parse.h" /* --costs: the syntax of MEMSHIM_COSTS */
#include "reader.h"
#include "whatif_report.h"

typedef unsigned long long ull;

#define DEFAULT_LINK   50.0  /* GB/s each way */
#define DEFAULT_TFLOPS 400.0 /* dense GEMM rate when the trace measured none */
#define DEFAULT_SWEEP  16
#define MAX_SWEEP      1000
#define MAX_LIMITS     64

/* ---- sizes --------------------------------------------------------------------------------- */

int whatif_parse_size(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    double v = strtod(s, &end);
    double unit = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k':
        unit = 1024.0, end++;
        break;
    case 'm':
        unit = 1048576.0, end++;
        break;
    case 'g':
        unit = 1073741824.0, end++;
        break;
    case 't':
        unit = 1099511627776.0, end++;
        break;
    default:
        break;
    }
    if (unit > 1 && tolower((unsigned char)*end) == 'i')
        end++;
    if (tolower((unsigned char)*end) == 'b')
        end++;
    double bytes = v * unit;
    if (*end != '\0' || !(bytes >= 0) || bytes >= 1.8e19)
        return -1;
    *out = (uint64_t)bytes;
    return 0;
}

struct options {
    uint64_t limits[MAX_LIMITS];
    size_t nlimits;
    int sweep; /* points, 0 = none */
    int json;
    int device;
    double link_gbps;
    double tflops;            /* 0 = measured or default */
    struct costs_rates costs; /* --costs; 0 = measured or default */
    uint64_t spill_min, granule;
    int no_host_use;
    const char *svg;
};

static struct whatif_rates rates_for(const struct options *o, const struct whatif_info *in)
{
    struct whatif_rates r = {.link = o->link_gbps * 1e9,
                             .auto_h2d = in->auto_h2d,
                             .auto_d2h = in->auto_d2h,
                             .auto_gemm = in->auto_gemm};
    if (o->tflops > 0)
        r.gemm = o->tflops * 1e12, r.gemm_source = "option";
    else if (in->gemm_flops_per_s > 0)
        r.gemm = in->gemm_flops_per_s, r.gemm_source = "measured";
    else
        r.gemm = DEFAULT_TFLOPS * 1e12, r.gemm_source = "default";
    return r;
}

/* ---- command ------------------------------------------------------------------------------- */

static int parse_limits(const char *arg, struct options *o)
{
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return -1;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->nlimits == MAX_LIMITS) {
            fprintf(stderr, "whatif: --limit: at most %d ceilings\n", MAX_LIMITS);
            rc = -1;
            break;
        }
        if (whatif_parse_size(tok, &o->limits[o->nlimits]) != 0) {
            fprintf(stderr,
                    "whatif: --limit: bad value '%s' (accepted: bytes with k/m/g/t, binary, "
                    "e.g. 24g, 1.5GiB, 512m; several separated by commas)\n",
                    tok);
            rc = -1;
            break;
        }
        o->nlimits++;
    }
    free(copy);
    return rc;
}

static int parse_double(const char *flag, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (*end || !(v > 0) || !isfinite(v)) {
        fprintf(stderr, "whatif: %s: bad value '%s' (a positive number)\n", flag, arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
    static const struct option options[] = {
        {"limit", required_argument, NULL, 'l'},
        {"sweep", optional_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"device", required_argument, NULL, 'd'},
        {"link-gbps", required_argument, NULL, 'L'},
        {"tflops", required_argument, NULL, 'T'},
        {"costs", required_argument, NULL, 'C'},
        {"svg", required_argument, NULL, 'S'},
        {"spill-min", required_argument, NULL, 'M'},
        {"granule", required_argument, NULL, 'G'},
        {"no-host-use", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    *o = (struct options){.device = -1,
                          .link_gbps = DEFAULT_LINK,
                          .spill_min = WHATIF_SPILL_MIN,
                          .granule = WHATIF_GRANULE};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:j", options, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'l':
            if (parse_limits(optarg, o) != 0)
                return -1;
            break;
        case 's':
            o->sweep = optarg ? (int)strtol(optarg, &end, 10) : DEFAULT_SWEEP;
            if (optarg && (*end || o->sweep < 2 || o->sweep > MAX_SWEEP)) {
                fprintf(stderr, "whatif: --sweep: bad value '%s' (points, 2..%d)\n", optarg,
                        MAX_SWEEP);
                return -1;
            }
            break;
        case 'j':
            o->json = 1;
            break;
        case 'd':
            o->device = (int)strtol(optarg, &end, 10);
            if (*end || o->device < 0 || o->device > 255) {
                fprintf(stderr, "whatif: --device: bad value '%s' (0..255)\n", optarg);
                return -1;
            }
            break;
        case 'L':
            if (parse_double("--link-gbps", optarg, &o->link_gbps) != 0)
                return -1;
            break;
        case 'T':
            if (parse_double("--tflops", optarg, &o->tflops) != 0)
                return -1;
            break;
        case 'S':
            o->svg = optarg;
            break;
        case 'C':
            if (costs_parse(optarg, &o->costs) != 0) {
                fprintf(stderr, "whatif: --costs: bad value '%s' (accepted: %s)\n", optarg,
                        COSTS_FORMS);
                return -1;
            }
            break;
        case 'H':
            o->no_host_use = 1;
            break;
        case 'G':
            if (whatif_parse_size(optarg, &o->granule) != 0 || o->granule == 0) {
                fprintf(stderr, "whatif: --granule: bad value '%s' (bytes with k/m/g/t)\n", optarg);
                return -1;
            }
            break;
        case 'M':
            if (whatif_parse_size(optarg, &o->spill_min) != 0) {
                fprintf(stderr, "whatif: --spill-min: bad value '%s' (bytes with k/m/g/t)\n",
                        optarg);
                return -1;
            }
            break;
        case 'h':
            printf("usage: memshim-analyze whatif --limit SIZE[,SIZE...] | --sweep[=N] [--svg "
                   "FILE]\n"
                   "       [--device N] [--link-gbps GB/s] [--tflops T] [--spill-min SIZE] "
                   "[--granule SIZE] [--no-host-use] [--costs h2d=R,d2h=R,gemm=R] "
                   "[--json] TRACE|DIR...\n");
            return 1;
        case ':':
            fprintf(stderr, "whatif: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "whatif: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (o->nlimits == 0 && !o->sweep) {
        fprintf(stderr, "whatif: give --limit SIZE[,SIZE...] or --sweep\n");
        return -1;
    }
    if (o->svg && !o->sweep) {
        fprintf(stderr, "whatif: --svg draws the --sweep curve: add --sweep\n");
        return -1;
    }
    return 0;
}

/* Ceilings of the sweep: n points from the peak down to the smallest workable ceiling. */
static size_t sweep_points(const struct whatif_info *in, int n, uint64_t *out)
{
    if (in->peak <= in->min_ceiling) {
        out[0] = in->peak;
        return 1;
    }
    uint64_t span = in->peak - in->min_ceiling;
    for (int i = 0; i < n; i++)
        out[i] = in->peak - (uint64_t)((double)span * i / (n - 1));
    out[n - 1] = in->min_ceiling;
    return (size_t)n;
}

static int run_one(const char *path, const struct options *o, struct json *j, int many)
{
    char err[512];
    struct whatif_trace *t = whatif_load(path, o->device, err, sizeof err);
    if (!t) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        return 1;
    }
    whatif_set_shim(t, o->spill_min, o->granule);
    whatif_set_host_use(t, !o->no_host_use);
    whatif_set_costs(t, o->costs.h2d_bytes_per_s, o->costs.d2h_bytes_per_s,
                     o->costs.gemm_flops_per_s);
    const struct whatif_info *in = whatif_info(t);
    if (in->status != READER_OK)
        fprintf(stderr, "memshim-analyze: %s: %s\n",
                in->status == READER_TRUNCATED ? "warning" : "error", in->error);
    struct whatif_rates r = rates_for(o, in);
    struct whatif_result res[MAX_LIMITS];
    uint64_t sweep[MAX_SWEEP];
    size_t nsweep = o->sweep ? sweep_points(in, o->sweep, sweep) : 0;
    struct whatif_result *pts = nsweep ? calloc(nsweep, sizeof *pts) : NULL;
    int rc = nsweep && !pts ? 1 : 0;
    size_t done = 0, swept = 0;
    for (; rc == 0 && done < o->nlimits; done++)
        if (whatif_simulate(t, o->limits[done], &res[done]) != 0)
            rc = 1;
    for (; rc == 0 && swept < nsweep; swept++)
        if (whatif_simulate(t, sweep[swept], &pts[swept]) != 0)
            rc = 1;
    if (rc) {
        fprintf(stderr, "memshim-analyze: %s: out of memory\n", path);
    } else if (o->json) {
        json_begin_object(j, NULL);
        whatif_report_json_info(j, in, &r);
        json_begin_array(j, "limits");
        for (size_t i = 0; i < done; i++)
            whatif_report_json_result(j, &res[i], &r, 1);
        json_end_array(j);
        if (nsweep) {
            json_begin_array(j, "sweep");
            for (size_t i = 0; i < swept; i++)
                whatif_report_json_result(j, &pts[i], &r, 0);
            json_end_array(j);
        }
        json_end_object(j);
    } else {
        if (many)
            fputc('\n', stdout);
        whatif_report_header(stdout, in, &r);
        if (done) {
            fputc('\n', stdout);
            whatif_report_totals(stdout, res, done, &r);
            for (size_t i = 0; i < done; i++)
                if (res[i].feasible && (!res[i].fits || whatif_bytes(&res[i].t[WHATIF_SHIM]) > 0))
                    whatif_report_steps(stdout, &res[i]);
        }
        if (nsweep) {
            fprintf(stdout, "\nSweep from the peak down to the smallest workable ceiling:\n");
            whatif_report_totals(stdout, pts, swept, &r);
        }
    }
    if (rc == 0 && o->svg && nsweep) {
        FILE *f = cli_output(o->svg);
        if (!f)
            rc = 1;
        else {
            whatif_chart_svg(f, pts, swept, in);
            rc = cli_output_close(f, o->svg) ? 1 : 0;
        }
    }
    for (size_t i = 0; i < done; i++)
        whatif_result_free(&res[i]);
    for (size_t i = 0; i < swept; i++)
        whatif_result_free(&pts[i]);
    free(pts);
    int st = in->status;
    whatif_free(t);
    return rc ? rc : st == READER_OK || st == READER_TRUNCATED ? 0 : 1;
}

int whatif_command(int argc, char **argv)
{
    struct options o;
    int p = parse(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    if (o.svg && traces.count > 1) {
        fprintf(stderr, "whatif: --svg draws one trace; name one\n");
        cli_traces_free(&traces);
        return 2;
    }
    struct json j;
    json_init(&j, stdout, 1);
    if (o.json && traces.count > 1) {
        json_begin_object(&j, NULL);
        json_begin_array(&j, "traces");
    }
    int rc = 0;
    for (size_t i = 0; i < traces.count; i++) {
        int r = run_one(traces.paths[i], &o, &j, i > 0);
        rc = r > rc ? r : rc;
    }
    if (o.json && traces.count > 1) {
        json_end_array(&j);
        json_end_object(&j);
    }
    cli_traces_free(&traces);
    return fflush(stdout) == 0 ? rc : 1;
}
