/* memshim-viz-scenario: writes the hand-made trace of tests/unit/viz_scenario.h for the e2e
 * checks (tests/e2e/viz_check.py).
 *
 *   memshim-viz-scenario [--ceiling] [--spill] [--oom] [--activation-mib N] -o OUT.mst
 *
 * Prints the number of event records written. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "viz_scenario.h"

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"ceiling", no_argument, NULL, 'c'},      {"spill", no_argument, NULL, 's'},
        {"oom", no_argument, NULL, 'm'},          {"activation-mib", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {0, 0, 0, 0},
    };
    struct viz_scenario s = {.activation_mib = 8};
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:", options, NULL)) != -1) {
        switch (c) {
        case 'c':
            s.with_ceiling = 1;
            break;
        case 's':
            s.with_spill = 1;
            break;
        case 'm':
            s.with_oom = 1;
            break;
        case 'a':
            s.activation_mib = strtoull(optarg, NULL, 0);
            break;
        case 'o':
            out = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "usage: memshim-viz-scenario [--ceiling] [--spill] [--oom] "
                        "[--activation-mib N] -o OUT.mst\n");
        return 2;
    }
    int n = viz_scenario_write(out, &s);
    if (n < 0) {
        perror(out);
        return 1;
    }
    printf("%d\n", n);
    return 0;
}
