/* Rules files: syntax, prefixes, comments, errors reported as FILE:LINE, and the first-match
 * order of classify (user rules before built-in ones; phases case-insensitive). */
#include <criterion/criterion.h>

#include "classify.h"
#include "core_util.h"
#include "rules.h"

static int parse(struct rule_set *set, const char *text)
{
    return rules_parse(set, text, strlen(text), "r.rules");
}

Test(rules, parses_lines_prefixes_and_comments)
{
    struct rule_set set;
    int errors = parse(&set, "# comment\n\n  workspace   *cublas*  \n"
                             "gradient symbol:*AccumulateGrad*\r\n"
                             "communication module:*/libnccl.so*\n"
                             "optimizer_state phase:optim*\n"
                             "activation at::native::foo(int, long)");
    cr_assert_eq(errors, 0);
    cr_assert_eq(set.count, 5);
    cr_assert_eq(set.rules[0].category, MST_CAT_WORKSPACE);
    cr_assert_eq(set.rules[0].target, RULE_FRAME);
    cr_assert_str_eq(set.rules[0].pattern, "*cublas*");
    cr_assert_eq(set.rules[1].target, RULE_SYMBOL);
    cr_assert_str_eq(set.rules[1].pattern, "*AccumulateGrad*", "CR stripped");
    cr_assert_eq(set.rules[2].target, RULE_MODULE);
    cr_assert_eq(set.rules[3].target, RULE_PHASE);
    cr_assert_str_eq(set.rules[3].pattern, "optim*");
    cr_assert_str_eq(set.rules[4].pattern, "at::native::foo(int, long)", "spaces kept");
    rules_free(&set);
}

Test(rules, errors_name_file_and_line)
{
    struct rule_set set;
    core_stderr_begin();
    int errors = parse(&set, "workspace *a*\nweights *b*\n\ngradient\nactivation symbol:\n"
                             "input *ok*\n");
    const char *out = core_stderr_end();
    cr_assert_eq(errors, 3);
    cr_assert_eq(set.count, 2, "good lines are kept");
    cr_assert_str_eq(out, "memshim: r.rules:2: unknown category 'weights' (expected parameter, "
                          "gradient, optimizer_state, activation, kv_cache, workspace, temporary, "
                          "communication, input or unknown)\n"
                          "memshim: r.rules:4: expected `category pattern` (a glob after the "
                          "category)\n"
                          "memshim: r.rules:5: expected `category pattern` (a glob after the "
                          "category)\n");
    rules_free(&set);
}

Test(rules, nul_byte_is_an_error)
{
    struct rule_set set;
    core_stderr_begin();
    int errors = rules_parse(&set, "input *a*\nin\0put *b*\n", 21, "z");
    const char *out = core_stderr_end();
    cr_assert_eq(errors, 1);
    cr_assert_eq(set.count, 1);
    cr_assert_str_eq(out, "memshim: z:2: unexpected NUL byte\n");
    rules_free(&set);
}

Test(rules, unreadable_file)
{
    struct rule_set set;
    core_stderr_begin();
    int r = rules_load_file(&set, "/nonexistent/memshim.rules");
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "/nonexistent/memshim.rules: cannot read the rules file"));
}

Test(classify, builtin_rules)
{
    classify_init(NULL);
    struct classify_frame cublas[] = {
        {"cublasLtMatmul", "/usr/lib/libcublasLt.so.13"},
        {"_ZN5torch8autograd6Engine17evaluate_functionEv", "/x/libtorch_cpu.so"}};
    cr_assert_eq(classify_site(cublas, 2), MST_CAT_WORKSPACE, "innermost library decides");
    struct classify_frame grad[] = {{"cudaMalloc", "/x/libcudart.so.13"},
                                    {"_ZN5torch8autograd6Engine17evaluate_functionEv", "/x/t.so"}};
    cr_assert_eq(classify_site(grad, 2), MST_CAT_GRADIENT);
    struct classify_frame nccl[] = {{NULL, "/opt/nccl/lib/libnccl.so.2"}};
    cr_assert_eq(classify_site(nccl, 1), MST_CAT_COMMUNICATION);
    struct classify_frame plain[] = {{"main", "/usr/bin/app"}, {NULL, NULL}};
    cr_assert_eq(classify_site(plain, 2), -1);
    cr_assert_eq(classify_phase("Optimizer.step#Adam"), MST_CAT_OPTIMIZER_STATE);
    cr_assert_eq(classify_phase("forward"), MST_CAT_ACTIVATION);
    cr_assert_eq(classify_phase("BACKWARD"), MST_CAT_GRADIENT, "phases ignore case");
    cr_assert_eq(classify_phase("step_3"), -1);
    classify_fini();
}

Test(classify, user_rules_come_first)
{
    char path[] = "/tmp/memshim-rules-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "temporary module:*libcublasLt*\nkv_cache phase:decode*\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    classify_init(path);
    struct classify_frame cublas[] = {{"cublasLtMatmul", "/usr/lib/libcublasLt.so.13"}};
    cr_assert_eq(classify_site(cublas, 1), MST_CAT_TEMPORARY);
    cr_assert_eq(classify_phase("decode_step"), MST_CAT_KV_CACHE);
    cr_assert_eq(classify_phase("forward"), MST_CAT_ACTIVATION, "built-ins still apply");
    classify_fini();
    unlink(path);
}

static unsigned unused_lines[4], nunused;

static void note_unused(const char *file, const struct rule *r)
{
    (void)file;
    if (nunused < 4)
        unused_lines[nunused++] = r->line;
}

Test(classify, user_rules_are_marked_and_unused_ones_named)
{
    char path[] = "/tmp/memshim-rules-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "input symbol:load_batch\n# a comment\nkv_cache symbol:never_called\n"
                       "temporary phase:scratch*\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    classify_init(path);
    cr_assert_eq(classify_unused(NULL), 3, "nothing matched yet");
    struct classify_frame f[] = {{"load_batch", "/usr/bin/app"}};
    cr_assert_eq(classify_site_from(f, 1), MST_CAT_INPUT | CLASSIFY_FROM_USER);
    cr_assert_eq(classify_phase_from("forward"), MST_CAT_ACTIVATION, "a built-in: no mark");
    cr_assert_eq(classify_phase_from("scratch 1"), MST_CAT_TEMPORARY | CLASSIFY_FROM_USER);
    nunused = 0;
    cr_assert_eq(classify_unused(note_unused), 1);
    cr_assert_eq(unused_lines[0], 3, "the rule's line in its file");
    classify_fini();
    unlink(path);
}

Test(classify, builtin_file_parses_cleanly)
{
    const char *src = getenv("MEMSHIM_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/shim/builtin_rules.txt", src ? src : ".");
    struct rule_set set;
    core_stderr_begin();
    int errors = rules_load_file(&set, path);
    const char *out = core_stderr_end();
    cr_assert_eq(errors, 0, "%s", out);
    cr_assert_gt(set.count, 20);
    rules_free(&set);
}

Test(rules, readonly_lines)
{
    struct rule_set set;
    int errors = parse(&set, "workspace *cublas*\n"
                             "readonly bias_act_fwd 1,2\n"
                             "  readonly   _ZL4adam*   1  \r\n"
                             "readonly void k<float>(float*, const float*) 0,255,64\n"
                             "activation *fwd*\n");
    cr_assert_eq(errors, 0);
    cr_assert_eq(set.count, 2, "category rules unchanged around readonly ones");
    cr_assert_str_eq(set.rules[1].pattern, "*fwd*");
    cr_assert_eq(set.nreadonly, 3);
    cr_assert_str_eq(set.readonly[0].pattern, "bias_act_fwd");
    cr_assert_eq(set.readonly[0].params[0], 0x6);
    cr_assert_str_eq(set.readonly[1].pattern, "_ZL4adam*", "spaces and CR stripped");
    cr_assert_eq(set.readonly[1].params[0], 0x2);
    cr_assert_str_eq(set.readonly[2].pattern, "void k<float>(float*, const float*)",
                     "the glob is all but the last word");
    cr_assert_eq(set.readonly[2].params[0], 0x1);
    cr_assert_eq(set.readonly[2].params[1], 0x1);
    cr_assert_eq(set.readonly[2].params[3], 1ull << 63);
    rules_free(&set);
}

Test(rules, readonly_errors_name_file_and_line)
{
    struct rule_set set;
    core_stderr_begin();
    int errors = parse(&set, "readonly\nreadonly k\nreadonly k 1,,2\nreadonly k 256\n"
                             "readonly k 0, 1\nreadonly k -1\nreadonly k 1x\nreadonly k 3\n");
    const char *out = core_stderr_end();
    cr_assert_eq(errors, 7);
    cr_assert_eq(set.nreadonly, 1, "the good line is kept");
    cr_assert_eq(set.readonly[0].params[0], 0x8);
    cr_assert_eq(set.count, 0);
    cr_assert_str_eq(
        out, "memshim: r.rules:1: expected `readonly KERNEL_GLOB INDEX[,INDEX...]`\n"
             "memshim: r.rules:2: expected `readonly KERNEL_GLOB INDEX[,INDEX...]`\n"
             "memshim: r.rules:3: bad parameter index list '1,,2' (comma-separated indices "
             "0..255)\n"
             "memshim: r.rules:4: bad parameter index list '256' (comma-separated indices "
             "0..255)\n"
             "memshim: r.rules:5: no spaces in the parameter index list (`0,2`, not `0, 2`)\n"
             "memshim: r.rules:6: bad parameter index list '-1' (comma-separated indices "
             "0..255)\n"
             "memshim: r.rules:7: bad parameter index list '1x' (comma-separated indices "
             "0..255)\n");
    rules_free(&set);
}

Test(classify, readonly_masks_from_user_rules)
{
    char path[] = "/tmp/memshim-rules-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "readonly gemv* 1\nreadonly *_bwd 2,3\nreadonly gemv_bwd 1\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    classify_init(path);
    uint64_t mask[RULES_READONLY_WORDS];
    cr_assert_eq(classify_readonly("gemv_fwd", mask), 1);
    cr_assert_eq(mask[0], 0x2);
    cr_assert_eq(classify_readonly("gemv_bwd", mask), 1);
    cr_assert_eq(mask[0], 0xe, "every matching rule adds its parameters");
    cr_assert_eq(classify_readonly("scale", mask), 0);
    cr_assert_eq(mask[0], 0);
    cr_assert_eq(classify_readonly(NULL, mask), 0, "an unnamed kernel matches nothing");
    classify_fini();
    unlink(path);
}

Test(rules, trailing_comment_is_not_part_of_the_pattern)
{
    struct rule_set set;
    int errors = parse(&set, "workspace *cublas*   # cuBLAS scratch\nactivation a#b\n");
    cr_assert_eq(errors, 0);
    cr_assert_eq(set.count, 2);
    cr_assert_str_eq(set.rules[0].pattern, "*cublas*");
    cr_assert_str_eq(set.rules[1].pattern, "a#b", "a # inside a word stays");
    rules_free(&set);
}

/* A FIFO is refused at once (not waited on for a writer), and an oversized file says why. */
Test(rules, fifo_and_oversized_files_are_refused_with_the_reason)
{
    char dir[] = "/tmp/memshim-rules-XXXXXX", fifo[64], big[64];
    cr_assert(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo.rules", dir);
    snprintf(big, sizeof big, "%s/big.rules", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    struct rule_set set;
    core_stderr_begin();
    int r = rules_load_file(&set, fifo);
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "not a regular file"), "%s", out);

    FILE *f = fopen(big, "w");
    for (int i = 0; i < (1 << 20) / 16 + 1; i++)
        fputs("input *abcdefg*\n", f);
    fclose(f);
    core_stderr_begin();
    r = rules_load_file(&set, big);
    out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "more than the 1048576 accepted"), "%s", out);
    unlink(fifo);
    unlink(big);
    rmdir(dir);
}
