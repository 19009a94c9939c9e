/* libFuzzer target: the MEMSHIM_COSTS / whatif --costs parser (shim/costs_parse.c) and the cost
 * formulas. Invariants: an accepted string round-trips through its printed rates; every rate
 * given is > 0; a rejected string leaves the output untouched; the formulas never wrap. */
#include "costs_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char s[512];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    struct costs_rates r = {1, 2, 3};
    if (costs_parse(s, &r) != 0) {
        if (r.h2d_bytes_per_s != 1 || r.d2h_bytes_per_s != 2 || r.gemm_flops_per_s != 3)
            abort();
        return 0;
    }
    /* Accepted: print the rates back as plain integers and parse them again. */
    char again[128] = "";
    int len = 0;
    const char *sep = "";
    const uint64_t v[3] = {r.h2d_bytes_per_s, r.d2h_bytes_per_s, r.gemm_flops_per_s};
    const char *const k[3] = {"h2d", "d2h", "gemm"};
    for (int i = 0; i < 3; i++) {
        if (!v[i])
            continue;
        len += snprintf(again + len, sizeof again - (size_t)len, "%s%s=%llu", sep, k[i],
                        (unsigned long long)v[i]);
        sep = ",";
    }
    struct costs_rates b;
    if (costs_parse(again, &b) != 0 || memcmp(&b, &r, sizeof b) != 0)
        abort();
    for (int i = 0; i < 3; i++) {
        uint64_t t = costs_ns_at(v[i] ? v[i] : 1, v[(i + 1) % 3]);
        if (v[(i + 1) % 3] == 0 ? t != COSTS_UNKNOWN_NS : t == COSTS_UNKNOWN_NS)
            abort();
    }
    uint64_t sp = costs_spill_ns(r.h2d_bytes_per_s, r.d2h_bytes_per_s, r.gemm_flops_per_s);
    if ((r.d2h_bytes_per_s && r.gemm_flops_per_s) != (sp != COSTS_UNKNOWN_NS))
        abort();
    return 0;
}
