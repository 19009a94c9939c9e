/* libFuzzer target: the rules-file parser (shim/rules.c) and the matching of what it accepts. */
#include "log.h"
#include "memshim/trace_format.h"
#include "rules.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    log_mute(1);
    struct rule_set set;
    int errors = rules_parse(&set, (const char *)data, size, "fuzz");
    if (errors < 0)
        return 0;
    for (size_t i = 0; i < set.count; i++) {
        const struct rule *r = &set.rules[i];
        if (r->category >= MST_CATEGORY_MAX || r->target > RULE_PHASE || !r->pattern[0])
            abort();
        fnmatch(r->pattern, "_ZN5torch8autograd6Engine17evaluate_functionEv", 0);
        fnmatch(r->pattern, "/usr/lib/x86_64-linux-gnu/libcublasLt.so.13", FNM_CASEFOLD);
    }
    for (size_t i = 0; i < set.nreadonly; i++) {
        const struct rule_readonly *r = &set.readonly[i];
        uint64_t any = 0;
        for (int w = 0; w < RULES_READONLY_WORDS; w++)
            any |= r->params[w];
        if (!r->pattern[0] || !any)
            abort();
        fnmatch(r->pattern, "_ZL12bias_act_fwdPfPKfS1_lli", 0);
    }
    rules_free(&set);
    return 0;
}
