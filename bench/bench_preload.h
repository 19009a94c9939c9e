/* bench_preload: the shape shared by the benchmarks that measure through LD_PRELOAD on simcuda
 * (bench_access, bench_hook). The program measures two numbers bare, then runs itself again
 * under the shim once per configuration, the child marked by an environment variable, and reads
 * the child's two numbers back. */
#ifndef MEMSHIM_BENCH_PRELOAD_H
#define MEMSHIM_BENCH_PRELOAD_H

#include <stdio.h>
#include <stdlib.h>

/* In the child (`flag` set): measure, print the two numbers, and return the exit status
 * (0 or 1). In the parent: -1. */
static int bench_preload_child_main(const char *flag, int (*measure)(long, double *, double *),
                                    long n)
{
    double a, b;
    if (!getenv(flag))
        return -1;
    if (measure(n, &a, &b) < 0)
        return 1;
    printf("%f %f\n", a, b);
    return 0;
}

/* Run `self` again with LD_PRELOAD=lib, `flag`=1 and the assignments in `env`, and read its two
 * numbers. 0 when it ran and answered. */
static int bench_preload_run(const char *flag, const char *self, const char *lib, long n,
                             const char *env, double *a, double *b)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env LD_PRELOAD='%s' %s=1 %s '%s' '%s' %ld", lib, flag, env, self,
             lib, n);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int ok = fscanf(p, "%lf %lf", a, b) == 2;
    return pclose(p) == 0 && ok ? 0 : -1;
}

#endif /* MEMSHIM_BENCH_PRELOAD_H */
