/* Parsing the trainer's command line. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "options.h"

static const char usage[] =
    "usage: %s [options]\n"
    "  --steps N        training steps (default 20)\n"
    "  --batch B        samples per step (default 64)\n"
    "  --input D        features per sample (default 64)\n"
    "  --hidden H       width of the hidden layers (default 768)\n"
    "  --layers L       linear layers, >= 1 (default 4)\n"
    "  --classes C      classes of the synthetic task (default 10)\n"
    "  --seed S         seed of data and weights (default 1)\n"
    "  --lr X           Adam learning rate (default 0.001)\n"
    "  --act relu|gelu  hidden activation (default relu; gelu keeps GEMM outputs for backward)\n"
    "  --gemm sgemm|ex  cuBLAS call for the GEMMs (default sgemm)\n"
    "  --workspace N    bytes of cuBLAS workspace to allocate, k/m/g suffixes; 0 = cuBLAS's own\n"
    "                   (default 1m)\n"
    "  --no-tags        do not call the memshim app API (tags, step marks)\n"
    "Prints 'step N loss X' per step on stdout.\n";

static void set_defaults(struct options *o)
{
    *o = (struct options){.steps = 20,
                          .batch = 64,
                          .input = 64,
                          .hidden = 768,
                          .layers = 4,
                          .classes = 10,
                          .seed = 1,
                          .lr = 1e-3f,
                          .act = MLP_ACT_RELU,
                          .gemm = OPTIONS_GEMM_SGEMM,
                          .workspace = 1 << 20,
                          .tags = true};
}

/* A count in [1, max]. */
static int parse_count(const char *name, const char *s, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > max) {
        fprintf(stderr, "mlp-train: --%s wants an integer in [1, %ld], not '%s'\n", name, max, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift)
        end++;
    if (errno || end == s || *end || s[0] == '-' || v > (1ULL << 40) >> shift) {
        fprintf(stderr, "mlp-train: --workspace wants bytes (k/m/g suffix), not '%s'\n", s);
        return -1;
    }
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_float(const char *name, const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v > 0.0f) || !isfinite(v)) {
        fprintf(stderr, "mlp-train: --%s wants a positive number, not '%s'\n", name, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "mlp-train: --seed wants an unsigned integer, not '%s'\n", s);
        return -1;
    }
    *out = v;
    return 0;
}

/* value must be one of the two words; *out gets 0 for the first and 1 for the second. */
static int parse_choice(const char *name, const char *s, const char *w0, const char *w1, int *out)
{
    if (strcmp(s, w0) && strcmp(s, w1)) {
        fprintf(stderr, "mlp-train: --%s wants %s or %s, not '%s'\n", name, w0, w1, s);
        return -1;
    }
    *out = strcmp(s, w0) != 0;
    return 0;
}

enum {
    OPT_STEPS = 256,
    OPT_BATCH,
    OPT_INPUT,
    OPT_HIDDEN,
    OPT_LAYERS,
    OPT_CLASSES,
    OPT_SEED,
    OPT_LR,
    OPT_ACT,
    OPT_GEMM,
    OPT_WORKSPACE,
    OPT_NO_TAGS,
    OPT_HELP
};

static const struct option long_options[] = {
    {"steps", required_argument, NULL, OPT_STEPS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"input", required_argument, NULL, OPT_INPUT},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"classes", required_argument, NULL, OPT_CLASSES},
    {"seed", required_argument, NULL, OPT_SEED},
    {"lr", required_argument, NULL, OPT_LR},
    {"act", required_argument, NULL, OPT_ACT},
    {"gemm", required_argument, NULL, OPT_GEMM},
    {"workspace", required_argument, NULL, OPT_WORKSPACE},
    {"no-tags", no_argument, NULL, OPT_NO_TAGS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Largest matrix dimension: GEMM sizes and leading dimensions are ints in cuBLAS. */
#define DIM_MAX 65536L

static int apply_option(int opt, const char *arg, struct options *o)
{
    int choice;
    switch (opt) {
    case OPT_STEPS:
        return parse_count("steps", arg, 1000000000L, &o->steps);
    case OPT_BATCH:
        return parse_count("batch", arg, DIM_MAX, &o->batch);
    case OPT_INPUT:
        return parse_count("input", arg, DIM_MAX, &o->input);
    case OPT_HIDDEN:
        return parse_count("hidden", arg, DIM_MAX, &o->hidden);
    case OPT_LAYERS:
        return parse_count("layers", arg, 1000, &o->layers);
    case OPT_CLASSES:
        return parse_count("classes", arg, DIM_MAX, &o->classes);
    case OPT_SEED:
        return parse_seed(arg, &o->seed);
    case OPT_LR:
        return parse_float("lr", arg, &o->lr);
    case OPT_ACT:
        if (parse_choice("act", arg, "relu", "gelu", &choice))
            return -1;
        o->act = choice ? MLP_ACT_GELU : MLP_ACT_RELU;
        return 0;
    case OPT_GEMM:
        if (parse_choice("gemm", arg, "sgemm", "ex", &choice))
            return -1;
        o->gemm = choice ? OPTIONS_GEMM_EX : OPTIONS_GEMM_SGEMM;
        return 0;
    case OPT_WORKSPACE:
        return parse_bytes(arg, &o->workspace);
    case OPT_NO_TAGS:
        o->tags = false;
        return 0;
    }
    return -1;
}

int options_parse(int argc, char **argv, struct options *o)
{
    set_defaults(o);
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        if (opt == OPT_HELP) {
            fprintf(stderr, usage, argv[0]);
            return 1;
        }
        if (opt == '?' || apply_option(opt, optarg, o)) {
            fprintf(stderr, usage, argv[0]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mlp-train: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}
