/* File and line of native frames from DWARF (this test program's own, built with -g), inline
 * frames included, and the site names that skip a shared wrapper frame. */
#include <criterion/criterion.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diff.h"
#include "dwarf_lines.h"
#include "model.h"
#include "site_label.h"
#include "tracegen.h"

/* Return addresses with known source lines. Each call is followed by a volatile store so that
 * it is not a tail call and the return address stays inside the caller. */
static volatile int sink;
static int line_a, line_b, line_inline;

static __attribute__((noinline)) void *return_address(void)
{
    return __builtin_return_address(0);
}

static __attribute__((noinline)) void *site_a(void)
{
    line_a = __LINE__ + 1;
    void *ip = return_address();
    sink = 1;
    return ip;
}

static inline __attribute__((always_inline)) void *inlined_helper(void)
{
    line_inline = __LINE__ + 1;
    void *ip = return_address();
    sink = 2;
    return ip;
}

static __attribute__((noinline)) void *site_b(void)
{
    line_b = __LINE__ + 1;
    void *ip = inlined_helper();
    sink = 3;
    return ip;
}

static uint64_t bias;

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    bias = info->dlpi_addr; /* the first object is the program */
    return 1;
}

static const char *self(void)
{
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    cr_assert(n > 0);
    path[n] = '\0';
    dl_iterate_phdr(find_main, NULL);
    return path;
}

/* What the shim records: the return address relative to the load base. */
static uint64_t offset_of(void *ip)
{
    return (uint64_t)(uintptr_t)ip - bias;
}

Test(dwarf_lines, plain_and_inlined)
{
    if (!dwarf_lines_available())
        cr_skip_test("built without libdw");
    const char *exe = self();
    struct dwarf_lines *d = dwarf_lines_new();
    struct dwarf_location loc[8];
    size_t n = dwarf_lines_lookup(d, exe, offset_of(site_a()) - 1, loc, 8);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(loc[0].function, "site_a");
    cr_expect(strstr(loc[0].file, "test_analyze_lines.c"), "%s", loc[0].file);
    cr_expect_eq(loc[0].line, (unsigned)line_a);

    n = dwarf_lines_lookup(d, exe, offset_of(site_b()) - 1, loc, 8);
    cr_assert_eq(n, 2, "the inlined helper and its caller");
    cr_expect_str_eq(loc[0].function, "inlined_helper");
    cr_expect_eq(loc[0].line, (unsigned)line_inline);
    cr_expect_str_eq(loc[1].function, "site_b");
    cr_expect_eq(loc[1].line, (unsigned)line_b);

    char buf[512], want[512];
    const char *s =
        dwarf_lines_describe(d, exe, offset_of(site_b()) - 1, "", "prog", buf, sizeof buf);
    snprintf(want, sizeof want,
             "inlined_helper at test_analyze_lines.c:%d inlined in site_b at "
             "test_analyze_lines.c:%d (prog)",
             line_inline, line_b);
    cr_expect(s && !strcmp(s, want), "%s", s ? s : "(null)");
    dwarf_lines_free(d);
}

Test(dwarf_lines, nothing_to_read)
{
    struct dwarf_lines *d = dwarf_lines_new();
    struct dwarf_location loc[4];
    char buf[256];
    cr_expect_eq(dwarf_lines_lookup(d, "/nonexistent/lib.so", 0x1000, loc, 4), 0);
    cr_expect_eq(dwarf_lines_lookup(d, "/proc/self/status", 0x10, loc, 4), 0, "not ELF");
    cr_expect_null(dwarf_lines_describe(d, "/nonexistent/lib.so", 0x1000, "f", "m", buf, 256));
    dwarf_lines_free(d);
}

/* Two sites that allocate through one wrapper frame (the same call instruction), reached from
 * site_a and from site_b: the summary names them by the callers, where the stacks differ; a
 * third site with a frame of its own keeps its innermost frame. The trace has no symbols, so
 * every name here comes from DWARF. */
Test(site_labels, skip_shared_wrapper)
{
    if (!dwarf_lines_available())
        cr_skip_test("built without libdw");
    const char *exe = self();
    struct tracegen *g = tracegen_new_memory(NULL);
    uint32_t th = tracegen_thread(g, 1, "main");
    uint32_t mod = tracegen_module(g, exe, bias, 1 << 20);
    uint64_t a = offset_of(site_a()), b = offset_of(site_b());
    uint64_t wrap = offset_of(return_address()); /* any other line of this file */
    uint32_t fa = tracegen_frame(g, 0, mod, NULL, bias + a, a);
    uint32_t fb = tracegen_frame(g, 0, mod, NULL, bias + b, b);
    uint32_t wa = tracegen_frame(g, fa, mod, NULL, bias + wrap, wrap);
    uint32_t wb = tracegen_frame(g, fb, mod, NULL, bias + wrap, wrap);
    tracegen_malloc(g, 10, th, 0xa000, 100, MST_CAT_PARAMETER, wa, 0);
    tracegen_malloc(g, 20, th, 0xb000, 300, MST_CAT_ACTIVATION, wb, 0);
    tracegen_malloc(g, 30, th, 0xc000, 50, MST_CAT_ACTIVATION, fa, 0);
    size_t size;
    const void *data = tracegen_data(g, &size);
    char err[256];
    struct model_options o = {0};
    struct model *m = model_replay_memory(data, size, "t.mst", &o, NULL, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    struct site_labels *l = site_labels_new(m);
    cr_expect_eq(site_labels_depth(l, wa), 1);
    cr_expect_eq(site_labels_depth(l, wb), 1);
    cr_expect_eq(site_labels_depth(l, fa), 0, "its own innermost frame is unique");
    char want[128];
    snprintf(want, sizeof want, "site_a at test_analyze_lines.c:%d (", line_a);
    cr_expect(strstr(site_labels_name(l, m, wa), want) == site_labels_name(l, m, wa), "%s",
              site_labels_name(l, m, wa));
    cr_expect(strstr(site_labels_name(l, m, wb), "inlined_helper at"), "%s",
              site_labels_name(l, m, wb));
    cr_expect_str_eq(site_labels_name(l, m, 0), "(no stack recorded)");
    site_labels_free(l);
    model_free(m);

    /* diff names its rows the same way */
    char path[] = "/tmp/memshim-lines-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, data, size), (ssize_t)size);
    close(fd);
    struct diff_result d;
    cr_assert_eq(diff_traces(path, path, &d, err, sizeof err), 0, "%s", err);
    int named = 0;
    for (size_t i = 0; i < d.nsites; i++)
        named += strstr(d.sites[i].name, "site_a at test_analyze_lines.c:") == d.sites[i].name;
    cr_expect_eq(named, 2, "the wrapper site from site_a and site_a's own");
    diff_result_free(&d);
    unlink(path);
    tracegen_free(g);
}
