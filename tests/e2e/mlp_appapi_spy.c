/* A stand-in for libmemshim's app API, preloaded into the example trainer to prove that its
 * weak references bind to a preloaded library: it counts the calls and, at exit, writes them
 * as JSON to $MLP_SPY_OUT.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memshim/memshim.h>
#include <memshim/trace_format.h>

#define MAX_STEPS 1024

static const char *const category_names[MST_CATEGORY_MAX] = MST_CATEGORY_NAMES;
static unsigned long pushes[MST_CATEGORY_MAX];
static unsigned long pops, refused, underflows;
static int depth, max_depth;
static uint64_t steps[MAX_STEPS];
static unsigned long nsteps;

int memshim_tag_push(const char *category)
{
    /* "unknown" is not a tag an application may push: index 0 is refused like a typo. */
    for (int c = 1; category && c < MST_CATEGORY_MAX; c++) {
        if (strcmp(category, category_names[c]) == 0) {
            pushes[c]++;
            if (++depth > max_depth)
                max_depth = depth;
            return 0;
        }
    }
    refused++;
    return -1;
}

void memshim_tag_pop(void)
{
    pops++;
    if (depth == 0)
        underflows++;
    else
        depth--;
}

void memshim_step_begin(uint64_t n)
{
    if (nsteps < MAX_STEPS)
        steps[nsteps] = n;
    nsteps++;
}

static void write_counts(FILE *f)
{
    fprintf(f, "{\"push\": {");
    for (int c = 1; c < MST_CATEGORY_MAX; c++)
        fprintf(f, "%s\"%s\": %lu", c > 1 ? ", " : "", category_names[c], pushes[c]);
    fprintf(f, "}, \"pop\": %lu, \"refused\": %lu, \"underflows\": %lu, \"depth_at_exit\": %d, ",
            pops, refused, underflows, depth);
    fprintf(f, "\"max_depth\": %d, \"step_begin\": [", max_depth);
    for (unsigned long i = 0; i < nsteps && i < MAX_STEPS; i++)
        fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)steps[i]);
    fprintf(f, "]}\n");
}

__attribute__((destructor)) static void spy_report(void)
{
    const char *path = getenv("MLP_SPY_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    write_counts(f);
    fclose(f);
}
