/* gen_trace_layout: writes mst_layout.py, the trace layout the e2e checkers read traces with,
 * from include/memshim/trace_format.h as the compiler lays it out: each record's struct format
 * and field names come from offsetof and sizeof, so the checkers never carry a second copy of
 * the layout. A struct whose fields listed here do not tile it exactly (a field added to the
 * header and not named here) stops the build.
 *
 *     gen_trace_layout OUT.py */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memshim/trace_format.h"

struct field {
    const char *name;
    size_t off, size, elem;
    int text; /* a char array: one bytes value */
};

/* clang-format off */
#define MEMBER(S, f)   (((struct S *)0)->f)
#define F(S, f)        {#f, offsetof(struct S, f), sizeof(MEMBER(S, f)), sizeof(MEMBER(S, f)), 0}
#define A(S, f)        {#f, offsetof(struct S, f), sizeof(MEMBER(S, f)), sizeof(MEMBER(S, f)[0]), 0}
#define T(S, f)        {#f, offsetof(struct S, f), sizeof(MEMBER(S, f)), 1, 1}
#define LAYOUT(S, ...) {#S, sizeof(struct S), (const struct field[]){__VA_ARGS__, {NULL, 0, 0, 0, 0}}}
/* clang-format on */

struct layout {
    const char *name;
    size_t size;
    const struct field *fields;
};

static const struct layout header =
    LAYOUT(mst_file_header, T(mst_file_header, magic), F(mst_file_header, version),
           F(mst_file_header, header_size), F(mst_file_header, pid), F(mst_file_header, rank),
           F(mst_file_header, stack_depth), F(mst_file_header, clock_base_ns),
           F(mst_file_header, wall_base_ns), T(mst_file_header, host), F(mst_file_header, flags),
           F(mst_file_header, reserved));

static const struct layout record =
    LAYOUT(mst_record_header, F(mst_record_header, kind), F(mst_record_header, reserved),
           F(mst_record_header, length));

/* Two kinds share each of these. */
static const struct layout map =
    LAYOUT(mst_rec_map, F(mst_rec_map, time_ns), F(mst_rec_map, addr), F(mst_rec_map, size),
           F(mst_rec_map, handle), F(mst_rec_map, thread), F(mst_rec_map, device),
           A(mst_rec_map, reserved));
static const struct layout phase = LAYOUT(mst_rec_phase, F(mst_rec_phase, time_ns),
                                          F(mst_rec_phase, thread), F(mst_rec_phase, name_id));

/* The short ALLOC and FREE, told from mst_rec_alloc and mst_rec_free by their lengths. */
static const struct layout alloc_short = LAYOUT(
    mst_rec_alloc_short, F(mst_rec_alloc_short, time_ns), F(mst_rec_alloc_short, addr),
    F(mst_rec_alloc_short, size), F(mst_rec_alloc_short, unrequested),
    F(mst_rec_alloc_short, thread), F(mst_rec_alloc_short, site), F(mst_rec_alloc_short, phase),
    F(mst_rec_alloc_short, kind), F(mst_rec_alloc_short, category), F(mst_rec_alloc_short, device),
    F(mst_rec_alloc_short, flags));
static const struct layout free_short = LAYOUT(
    mst_rec_free_short, F(mst_rec_free_short, time_ns), F(mst_rec_free_short, addr),
    F(mst_rec_free_short, thread), F(mst_rec_free_short, kind), F(mst_rec_free_short, device),
    F(mst_rec_free_short, flags), F(mst_rec_free_short, reserved));

#define OWN(S, ...) &(const struct layout)LAYOUT(S, __VA_ARGS__)

static const struct {
    const char *name;
    int kind;
    const struct layout *layout;
} records[] = {
    {"STRING", MST_REC_STRING, OWN(mst_rec_string, F(mst_rec_string, id))},
    {"MODULE", MST_REC_MODULE,
     OWN(mst_rec_module, F(mst_rec_module, id), F(mst_rec_module, flags), F(mst_rec_module, base),
         F(mst_rec_module, size))},
    {"FRAME", MST_REC_FRAME,
     OWN(mst_rec_frame, F(mst_rec_frame, id), F(mst_rec_frame, parent), F(mst_rec_frame, module_id),
         F(mst_rec_frame, symbol_id), F(mst_rec_frame, ip), F(mst_rec_frame, module_offset))},
    {"THREAD", MST_REC_THREAD,
     OWN(mst_rec_thread, F(mst_rec_thread, id), F(mst_rec_thread, os_tid))},
    {"DEVICE", MST_REC_DEVICE,
     OWN(mst_rec_device, F(mst_rec_device, ordinal), F(mst_rec_device, cc_major),
         F(mst_rec_device, cc_minor), F(mst_rec_device, reserved), F(mst_rec_device, total_bytes),
         F(mst_rec_device, ceiling_bytes))},
    {"ALLOC", MST_REC_ALLOC,
     OWN(mst_rec_alloc, F(mst_rec_alloc, time_ns), F(mst_rec_alloc, addr), F(mst_rec_alloc, size),
         F(mst_rec_alloc, requested), F(mst_rec_alloc, stream), F(mst_rec_alloc, thread),
         F(mst_rec_alloc, site), F(mst_rec_alloc, phase), F(mst_rec_alloc, kind),
         F(mst_rec_alloc, category), F(mst_rec_alloc, device), F(mst_rec_alloc, flags))},
    {"FREE", MST_REC_FREE,
     OWN(mst_rec_free, F(mst_rec_free, time_ns), F(mst_rec_free, addr), F(mst_rec_free, size),
         F(mst_rec_free, stream), F(mst_rec_free, thread), F(mst_rec_free, site),
         F(mst_rec_free, kind), F(mst_rec_free, device), F(mst_rec_free, flags),
         F(mst_rec_free, reserved))},
    {"MAP", MST_REC_MAP, &map},
    {"UNMAP", MST_REC_UNMAP, &map},
    {"PHASE_PUSH", MST_REC_PHASE_PUSH, &phase},
    {"PHASE_POP", MST_REC_PHASE_POP, &phase},
    {"STEP", MST_REC_STEP,
     OWN(mst_rec_step, F(mst_rec_step, time_ns), F(mst_rec_step, step), F(mst_rec_step, thread),
         F(mst_rec_step, reserved))},
    {"CEILING", MST_REC_CEILING,
     OWN(mst_rec_ceiling, F(mst_rec_ceiling, time_ns), F(mst_rec_ceiling, ceiling_bytes),
         F(mst_rec_ceiling, device), F(mst_rec_ceiling, policy), A(mst_rec_ceiling, reserved))},
    {"OOM", MST_REC_OOM,
     OWN(mst_rec_oom, F(mst_rec_oom, time_ns), F(mst_rec_oom, request), F(mst_rec_oom, ceiling),
         F(mst_rec_oom, resident), A(mst_rec_oom, by_category), F(mst_rec_oom, thread),
         F(mst_rec_oom, site), F(mst_rec_oom, phase), F(mst_rec_oom, kind), F(mst_rec_oom, device),
         A(mst_rec_oom, reserved))},
    {"RETAG", MST_REC_RETAG,
     OWN(mst_rec_retag, F(mst_rec_retag, time_ns), F(mst_rec_retag, addr),
         F(mst_rec_retag, category), F(mst_rec_retag, flags), F(mst_rec_retag, device),
         A(mst_rec_retag, reserved))},
    {"OP", MST_REC_OP,
     OWN(mst_rec_op, F(mst_rec_op, time_ns), F(mst_rec_op, stream), F(mst_rec_op, m),
         F(mst_rec_op, n), F(mst_rec_op, k), F(mst_rec_op, batch), F(mst_rec_op, flops),
         F(mst_rec_op, thread), F(mst_rec_op, name_id), F(mst_rec_op, naccess), F(mst_rec_op, kind),
         F(mst_rec_op, dtype_a), F(mst_rec_op, dtype_b), F(mst_rec_op, dtype_c))},
    {"ACCESS", MST_REC_ACCESS,
     OWN(mst_rec_access, F(mst_rec_access, addr), F(mst_rec_access, size),
         F(mst_rec_access, alloc_addr), F(mst_rec_access, mode), A(mst_rec_access, reserved))},
    {"RESIDENCY", MST_REC_RESIDENCY,
     OWN(mst_rec_residency, F(mst_rec_residency, time_ns), F(mst_rec_residency, addr),
         F(mst_rec_residency, bytes), F(mst_rec_residency, duration_ns),
         F(mst_rec_residency, flops), F(mst_rec_residency, thread), F(mst_rec_residency, event),
         F(mst_rec_residency, device), A(mst_rec_residency, reserved))},
    {"MEASURE", MST_REC_MEASURE,
     OWN(mst_rec_measure, F(mst_rec_measure, time_ns), F(mst_rec_measure, h2d_bytes_per_s),
         F(mst_rec_measure, d2h_bytes_per_s), F(mst_rec_measure, gemm_flops_per_s),
         F(mst_rec_measure, device), A(mst_rec_measure, reserved))},
    {"OP_DEFINE", MST_REC_OP_DEFINE,
     OWN(mst_rec_op_define, F(mst_rec_op_define, shape), F(mst_rec_op_define, reserved))},
    {"OP_REPEAT", MST_REC_OP_REPEAT,
     OWN(mst_rec_op_repeat, F(mst_rec_op_repeat, shape), F(mst_rec_op_repeat, delta_ns))},
    {"SUMMARY", MST_REC_SUMMARY,
     OWN(mst_rec_summary, F(mst_rec_summary, time_ns), F(mst_rec_summary, allocations),
         F(mst_rec_summary, frees), F(mst_rec_summary, failed_allocations),
         F(mst_rec_summary, peak_resident), F(mst_rec_summary, resident_at_exit),
         F(mst_rec_summary, spills), F(mst_rec_summary, restores), F(mst_rec_summary, prefetches),
         F(mst_rec_summary, drops), F(mst_rec_summary, recomputes),
         F(mst_rec_summary, spilled_bytes), F(mst_rec_summary, restored_bytes),
         F(mst_rec_summary, dropped_bytes), F(mst_rec_summary, recompute_flops),
         F(mst_rec_summary, events_lost))},
    {"TENSOR_ALLOC", MST_REC_TENSOR_ALLOC,
     OWN(mst_rec_tensor_alloc, F(mst_rec_tensor_alloc, time_ns), F(mst_rec_tensor_alloc, addr),
         F(mst_rec_tensor_alloc, size), F(mst_rec_tensor_alloc, requested),
         F(mst_rec_tensor_alloc, thread), F(mst_rec_tensor_alloc, site),
         F(mst_rec_tensor_alloc, phase), F(mst_rec_tensor_alloc, category),
         F(mst_rec_tensor_alloc, device), F(mst_rec_tensor_alloc, flags),
         F(mst_rec_tensor_alloc, reserved))},
    {"TENSOR_FREE", MST_REC_TENSOR_FREE,
     OWN(mst_rec_tensor_free, F(mst_rec_tensor_free, time_ns), F(mst_rec_tensor_free, addr),
         F(mst_rec_tensor_free, thread), F(mst_rec_tensor_free, site),
         F(mst_rec_tensor_free, device), A(mst_rec_tensor_free, reserved))},
    {"AUTOGRAD", MST_REC_AUTOGRAD,
     OWN(mst_rec_autograd, F(mst_rec_autograd, addr), F(mst_rec_autograd, seq),
         F(mst_rec_autograd, fwd_thread), F(mst_rec_autograd, thread), F(mst_rec_autograd, kind),
         A(mst_rec_autograd, reserved))},
};

static char code_of(size_t size)
{
    switch (size) {
    case 1:
        return 'B';
    case 2:
        return 'H';
    case 4:
        return 'I';
    case 8:
        return 'Q';
    default:
        return 0;
    }
}

/* Print `("<fmt", [names])`: a reserved array is padding, a char array one bytes value, another
 * array of n scalars n names. */
static void print_layout(const struct layout *l)
{
    char fmt[256] = "<", names[2048] = "";
    size_t at = 0, nf = strlen(fmt), nn = 0;
    for (const struct field *f = l->fields; f->name; f++) {
        if (f->off != at) {
            fprintf(stderr,
                    "gen_trace_layout: %s.%s is at %zu, expected %zu: a field is not "
                    "listed\n",
                    l->name, f->name, f->off, at);
            exit(1);
        }
        at += f->size;
        if (f->text || (strncmp(f->name, "reserved", 8) == 0 && f->size != f->elem)) {
            int pad = !f->text;
            nf += (size_t)snprintf(fmt + nf, sizeof fmt - nf, "%zu%c", f->size, pad ? 'x' : 's');
            if (!pad)
                nn += (size_t)snprintf(names + nn, sizeof names - nn, "\"%s\", ", f->name);
            continue;
        }
        char c = code_of(f->elem);
        if (!c) {
            fprintf(stderr, "gen_trace_layout: %s.%s: no struct code for %zu bytes\n", l->name,
                    f->name, f->elem);
            exit(1);
        }
        for (size_t i = 0; i < f->size / f->elem; i++) {
            nf += (size_t)snprintf(fmt + nf, sizeof fmt - nf, "%c", c);
            if (f->size == f->elem)
                nn += (size_t)snprintf(names + nn, sizeof names - nn, "\"%s\", ", f->name);
            else
                nn += (size_t)snprintf(names + nn, sizeof names - nn, "\"%s%zu\", ", f->name, i);
        }
    }
    if (at != l->size) {
        fprintf(stderr, "gen_trace_layout: %s has %zu bytes, the fields listed %zu\n", l->name,
                l->size, at);
        exit(1);
    }
    printf("(\"%s\", [%s])", fmt, names);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !freopen(argv[1], "w", stdout)) {
        fprintf(stderr, "usage: gen_trace_layout OUT.py\n");
        return 2;
    }
    static const char *const categories[] = MST_CATEGORY_NAMES;
    static const char *const kinds[] = MST_KIND_NAMES;
    printf("\"\"\"The trace layout of include/memshim/trace_format.h, generated at build time by\n"
           "tests/e2e/gen_trace_layout.c. Do not edit.\"\"\"\n\n");
    printf("MAGIC = b\"MEMSHIM\\x1a\"\nVERSION = %d\n", MST_VERSION);
    printf("HEADER = ");
    print_layout(&header);
    printf("\nRECORD = ");
    print_layout(&record);
    printf("\n\n# record name -> kind\nREC = {\n");
    for (size_t i = 0; i < sizeof records / sizeof records[0]; i++)
        printf("    \"%s\": %d,\n", records[i].name, records[i].kind);
    printf("}\n\n# kind -> (struct format of the fixed part, field names)\nPAYLOAD = {\n");
    for (size_t i = 0; i < sizeof records / sizeof records[0]; i++) {
        printf("    %d: ", records[i].kind);
        print_layout(records[i].layout);
        printf(",\n");
    }
    printf("}\n\n# an ALLOC of fewer payload bytes than PAYLOAD's (synchronous; requested is size "
           "- unrequested)\nALLOC_SHORT = ");
    print_layout(&alloc_short);
    printf("\n# a FREE of fewer payload bytes than PAYLOAD's (a synchronous free)\nFREE_SHORT = ");
    print_layout(&free_short);
    printf("\n\nCATEGORIES = [");
    for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++)
        printf("\"%s\", ", categories[i]);
    printf("]\n\n# allocation kind name -> value (enum mst_alloc_kind)\nKIND = {\n");
    for (size_t i = 1; i < sizeof kinds / sizeof kinds[0]; i++)
        printf("    \"%s\": %zu,\n", kinds[i], i);
    printf("}\n\nF_HANDLE, F_HOST = %u, %u\nF_CAT_TAGGED, F_CAT_RULE = %u, %u\n",
           MST_ALLOC_F_HANDLE, MST_ALLOC_F_HOST, MST_ALLOC_F_CAT_TAGGED, MST_ALLOC_F_CAT_RULE);
    printf("FILE_F_STACKS, FILE_F_ACCESSES = %u, %u\n", MST_FILE_F_STACKS, MST_FILE_F_ACCESSES);
    printf("ACCESS_READ, ACCESS_WRITE, ACCESS_MAYBE = %u, %u, %u\n", MST_ACCESS_READ,
           MST_ACCESS_WRITE, MST_ACCESS_MAYBE);
    printf("RES_SPILL, RES_RESTORE, RES_PREFETCH, RES_DROP, RES_RECOMPUTE = %d, %d, %d, %d, %d\n",
           MST_RES_SPILL, MST_RES_RESTORE, MST_RES_PREFETCH, MST_RES_DROP, MST_RES_RECOMPUTE);
    printf("RES_HOST_USE = %d\n", MST_RES_HOST_USE);
    printf("OP_GEMM, OP_MEMCPY, OP_MEMSET, OP_KERNEL = %d, %d, %d, %d\n", MST_OP_GEMM,
           MST_OP_MEMCPY, MST_OP_MEMSET, MST_OP_KERNEL);
    return fclose(stdout) == 0 ? 0 : 1;
}
