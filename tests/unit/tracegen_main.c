/* memshim-tracegen: writes a synthetic training trace (tracegen.h) for tests, the fuzz corpus
 * and the benchmark.
 *
 *   memshim-tracegen [--steps N] [--layers N] [--layer-bytes B] [--activation-bytes B]
 *                    [--temporaries N] [--unknown] [--leak] [--oom-at STEP] [--rank R]
 *                    [--pid P] [--label TEXT] [--no-summary] [--free-at-exit] [--truncate BYTES] -o
 * OUT.mst
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracegen.h"

struct options {
    struct tracegen_training run;
    struct tracegen_header header;
    int summary;
    long truncate;
    const char *out;
};

static int parse(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"steps", required_argument, NULL, 's'},
        {"layers", required_argument, NULL, 'l'},
        {"layer-bytes", required_argument, NULL, 'p'},
        {"activation-bytes", required_argument, NULL, 'a'},
        {"temporaries", required_argument, NULL, 't'},
        {"unknown", no_argument, NULL, 'u'},
        {"leak", no_argument, NULL, 'k'},
        {"oom-at", required_argument, NULL, 'm'},
        {"rank", required_argument, NULL, 'r'},
        {"pid", required_argument, NULL, 'P'},
        {"label", required_argument, NULL, 'L'},
        {"no-summary", no_argument, NULL, 'n'},
        {"free-at-exit", no_argument, NULL, 'F'},
        {"truncate", required_argument, NULL, 'T'},
        {"output", required_argument, NULL, 'o'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->run.steps = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'l':
            o->run.layers = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'p':
            o->run.layer_bytes = strtoull(optarg, NULL, 0);
            break;
        case 'a':
            o->run.activation_bytes = strtoull(optarg, NULL, 0);
            break;
        case 't':
            o->run.temporaries = strtoull(optarg, NULL, 0);
            break;
        case 'u':
            o->run.unknown = 1;
            break;
        case 'k':
            o->run.leak = 1;
            break;
        case 'm':
            o->run.oom_at_step = atoi(optarg);
            break;
        case 'r':
            o->header.rank = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'P':
            o->header.pid = (uint32_t)strtoul(optarg, NULL, 0);
            break;
        case 'L':
            o->header.label = optarg;
            break;
        case 'F':
            o->run.free_at_exit = 1;
            break;
        case 'n':
            o->summary = 0;
            break;
        case 'T':
            o->truncate = atol(optarg);
            break;
        case 'o':
            o->out = optarg;
            break;
        default:
            return -1;
        }
    }
    return o->out && optind == argc ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options o = {
        .run = {.steps = 4,
                .layers = 4,
                .layer_bytes = 1 << 20,
                .activation_bytes = 1 << 19,
                .temporaries = 1},
        .header = {.pid = 1000,
                   .rank = MST_NO_RANK,
                   .host = "testhost",
                   .stack_depth = 24,
                   .flags = MST_FILE_F_STACKS},
        .summary = 1,
        .truncate = -1,
    };
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: memshim-tracegen [options] -o OUT.mst (see the source)\n");
        return 2;
    }
    struct tracegen *g = tracegen_new_file(o.out, &o.header);
    if (!g) {
        perror(o.out);
        return 1;
    }
    tracegen_training_run(g, &o.run);
    if (o.summary) {
        struct mst_rec_summary s = {0};
        tracegen_summary(g, &s);
    }
    int rc = tracegen_finish(g);
    tracegen_free(g);
    if (rc == 0 && o.truncate >= 0 && truncate(o.out, o.truncate) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "memshim-tracegen: writing %s failed\n", o.out);
    return rc ? 1 : 0;
}
