/* examples/mlp/memshim.rules declares which kernel parameters the trainer's kernels only read.
 * The shim cannot check that promise, so this test does: every kernel of kernels.inc is built
 * here exactly as kernels_sim.c builds it (kernel_macros.h's simcuda entry), run on
 * canary-filled host buffers with each activation code, and each pointer parameter is
 * compared before and after. A parameter the file declares read-only must never change; a
 * pointer parameter it leaves out must change in some run (else the file forgets one, and the
 * trainer's GEMM outputs would stop being droppable without any test noticing). The rules are
 * parsed and matched with the shim's own parser, under every name a kernel has: simcuda's plain
 * name, nvcc's device symbol (_Z<length><name>...) and a static kernel's host stub (_ZL...). */
#include <criterion/criterion.h>

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_macros.h"
#include "kernels.h"
#include "rules.h"

enum param_kind { P_FLOATS, P_CONST_FLOATS, P_INTS, P_CONST_INTS, P_LONG, P_INT, P_FLOAT };

/* A parameter type the list below lacks fails to compile: extend it with the kernels. */
#define MLP_KIND(i, p)                                                                             \
    _Generic((MLP_PAIR_TYPE p){0},                                                                 \
        float *: P_FLOATS,                                                                         \
        const float *: P_CONST_FLOATS,                                                             \
        int *: P_INTS,                                                                             \
        const int *: P_CONST_INTS,                                                                 \
        long: P_LONG,                                                                              \
        int: P_INT,                                                                                \
        float: P_FLOAT)

/* kernel_macros.h's simcuda kernel, plus the kind of each parameter. */
#undef MLP_KERNEL
#define MLP_KERNEL(name, ...)                                                                      \
    static const int name##_kinds[] = {MLP_MAP(MLP_KIND, __VA_ARGS__)};                            \
    static void name##_body(MLP_MAP(MLP_DECL, __VA_ARGS__));                                       \
    static void name(void **params, const simcuda_launch *launch)                                  \
    {                                                                                              \
        (void)launch;                                                                              \
        name##_body(MLP_MAP(MLP_ARG, __VA_ARGS__));                                                \
    }                                                                                              \
    static void name##_body(MLP_MAP(MLP_DECL, __VA_ARGS__))

#include "kernels.inc"

struct kernel {
    const char *name;
    void (*fn)(void **, const simcuda_launch *);
    const int *kinds;
    int nparams;
};

static const struct kernel kernels[KERNELS_COUNT] = {
#define MLP_KERNEL_NAME(k) [KERNELS_##k] = {#k, k, k##_kinds, sizeof k##_kinds / sizeof(int)},
#include "kernels.def"
#undef MLP_KERNEL_NAME
};

#define MAX_PARAMS 12
/* Every size parameter (rows, cols, classes, n) is DIM; buffers hold DIM * DIM elements and
 * labels stay below DIM. */
#define DIM   4
#define ELEMS (DIM * DIM)

/* The read-only mask the rules give a kernel under `name`. */
static uint64_t mask_of(const struct rule_set *set, const char *name)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < set->nreadonly; i++) {
        const struct rule_readonly *r = &set->readonly[i];
        for (int w = 1; w < RULES_READONLY_WORDS; w++)
            cr_assert_eq(r->params[w], 0, "%s: index past the trainer's parameters", r->pattern);
        if (fnmatch(r->pattern, name, 0) == 0)
            mask |= r->params[0];
    }
    return mask;
}

static void load_rules(struct rule_set *set)
{
    FILE *f = fopen(MLP_RULES_FILE, "r");
    cr_assert(f, "cannot open %s", MLP_RULES_FILE);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    cr_assert_eq(rules_parse(set, text, len, MLP_RULES_FILE), 0, "the rules file has errors");
    cr_assert_eq(set->count, 0, "only readonly rules expected");
    cr_assert_gt(set->nreadonly, 0);
}

/* Run kernel k once with integer parameters `ival` (the activation code): a bit per pointer
 * parameter whose buffer differs afterwards. */
static uint64_t run_once(const struct kernel *k, int ival)
{
    union {
        float f[ELEMS];
        int i[ELEMS];
    } buf[MAX_PARAMS], before[MAX_PARAMS];
    long longs[MAX_PARAMS];
    int ints[MAX_PARAMS];
    float floats[MAX_PARAMS];
    void *ptrs[MAX_PARAMS];
    void *params[MAX_PARAMS];
    for (int p = 0; p < k->nparams; p++) {
        for (int j = 0; j < ELEMS; j++) {
            buf[p].f[j] = 0.25f + 0.01f * (float)(p * ELEMS + j);
            if (k->kinds[p] == P_INTS || k->kinds[p] == P_CONST_INTS)
                buf[p].i[j] = j % DIM;
        }
        ptrs[p] = &buf[p];
        longs[p] = DIM;
        ints[p] = ival;
        floats[p] = 0.5f;
        switch (k->kinds[p]) {
        case P_LONG:
            params[p] = &longs[p];
            break;
        case P_INT:
            params[p] = &ints[p];
            break;
        case P_FLOAT:
            params[p] = &floats[p];
            break;
        default:
            params[p] = &ptrs[p];
        }
    }
    memcpy(before, buf, sizeof buf);
    k->fn(params, NULL);
    uint64_t changed = 0;
    for (int p = 0; p < k->nparams; p++)
        if (memcmp(&before[p], &buf[p], sizeof buf[p]) != 0)
            changed |= 1ull << p;
    return changed;
}

Test(mlp_readonly, rules_match_what_the_kernels_write)
{
    struct rule_set set;
    load_rules(&set);
    for (int id = 0; id < KERNELS_COUNT; id++) {
        const struct kernel *k = &kernels[id];
        cr_assert_leq(k->nparams, MAX_PARAMS);
        uint64_t declared = mask_of(&set, k->name);
        /* The device symbol (what cudaFuncGetName returns) and a static kernel's host stub. */
        for (int stub = 0; stub < 2; stub++) {
            char mangled[128];
            snprintf(mangled, sizeof mangled, "_Z%s%zu%sPfPKf", stub ? "L" : "", strlen(k->name),
                     k->name);
            cr_expect_eq(mask_of(&set, mangled), declared,
                         "%s: the nvcc symbol %s gets other parameters than the simcuda name",
                         k->name, mangled);
        }
        uint64_t pointers = 0;
        for (int p = 0; p < k->nparams; p++)
            if (k->kinds[p] <= P_CONST_INTS)
                pointers |= 1ull << p;
        cr_expect_eq(declared & ~pointers, 0, "%s: a non-pointer parameter declared read-only",
                     k->name);
        uint64_t written = run_once(k, MLP_ACT_RELU) | run_once(k, MLP_ACT_GELU);
        cr_expect_eq(declared & written, 0,
                     "%s: parameters %#llx are declared read-only but the kernel writes them",
                     k->name, (unsigned long long)(declared & written));
        cr_expect_eq(pointers & ~declared & ~written, 0,
                     "%s: pointer parameters %#llx are never written but not declared read-only",
                     k->name, (unsigned long long)(pointers & ~declared & ~written));
    }
    rules_free(&set);
}

/* The test itself must be able to fail: a kernel that writes a parameter is caught. */
Test(mlp_readonly, a_written_parameter_is_seen)
{
    const struct kernel *k = &kernels[KERNELS_adam];
    uint64_t written = run_once(k, 0);
    cr_assert_eq(written & 0xf, 0xd, "adam writes p, m and v (params 0, 2, 3), not g: %#llx",
                 (unsigned long long)written);
}
