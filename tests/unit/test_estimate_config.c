/* Config files and values of `memshim-analyze estimate`. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "estimate_config.h"

static int parse(struct estimate_config *c, const char *text, char *err, size_t len)
{
    estimate_config_defaults(c);
    return estimate_config_parse(c, text, strlen(text), "job.conf", err, len);
}

Test(estimate_config, counts)
{
    uint64_t v;
    cr_expect_eq(estimate_parse_count("4096", &v), 0);
    cr_expect_eq(v, 4096);
    cr_expect_eq(estimate_parse_count("7.5B", &v), 0);
    cr_expect_eq(v, 7500000000ull);
    cr_expect_eq(estimate_parse_count("1e9", &v), 0);
    cr_expect_eq(v, 1000000000ull);
    cr_expect_eq(estimate_parse_count("350M", &v), 0);
    cr_expect_eq(v, 350000000ull);
    cr_expect_eq(estimate_parse_count("1.5T", &v), 0);
    cr_expect_eq(v, 1500000000000ull);
    cr_expect_eq(estimate_parse_count("2k", &v), 0);
    cr_expect_eq(v, 2000);
    const char *bad[] = {"", "-1", "2.5", "1e-3", "abc", "7.5BB", "0x10", "inf", "nan", "1 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_neq(estimate_parse_count(bad[i], &v), 0, "'%s' accepted", bad[i]);
}

Test(estimate_config, sizes)
{
    uint64_t v;
    cr_expect_eq(estimate_parse_size("80g", &v), 0);
    cr_expect_eq(v, 80ull << 30);
    cr_expect_eq(estimate_parse_size("80GiB", &v), 0);
    cr_expect_eq(v, 80ull << 30);
    cr_expect_eq(estimate_parse_size("24576m", &v), 0);
    cr_expect_eq(v, 24ull << 30);
    cr_expect_eq(estimate_parse_size("0.5k", &v), 0);
    cr_expect_eq(v, 512);
    cr_expect_eq(estimate_parse_size("1000", &v), 0);
    cr_expect_eq(v, 1000);
    cr_expect_neq(estimate_parse_size("80x", &v), 0);
    cr_expect_neq(estimate_parse_size("g", &v), 0);
    cr_expect_neq(estimate_parse_size("80gb2", &v), 0);
}

Test(estimate_config, file_with_comments)
{
    struct estimate_config c;
    char err[512];
    const char *text = "# GPT-3 175B, Korthikanti et al. Table 3\n"
                       "layers = 96\n"
                       "hidden=12288   # h\n"
                       "  heads\t=  96\n"
                       "\n"
                       "precision = BF16\n"
                       "recompute = selective\n"
                       "sp = yes\n"
                       "optimizer = adamw\n"
                       "micro-batch = 2\n"
                       "gpu = 80g\n"
                       "params = 175B"; /* no final newline */
    cr_assert_eq(parse(&c, text, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.layers, 96);
    cr_expect_eq(c.hidden, 12288);
    cr_expect_eq(c.heads, 96);
    cr_expect_eq(c.precision, ESTIMATE_BF16);
    cr_expect_eq(c.recompute, ESTIMATE_RECOMPUTE_SELECTIVE);
    cr_expect_eq(c.sp, 1);
    cr_expect_eq(c.optimizer, ESTIMATE_ADAM);
    cr_expect_eq(c.micro_batch, 2);
    cr_expect_eq(c.gpu, 80ull << 30);
    cr_expect_eq(c.params, 175000000000ull);
    cr_expect(estimate_config_given(&c, "micro_batch"));
    cr_expect(!estimate_config_given(&c, "tp"));
}

/* Every error names the file and line, the key, and what would have been accepted. */
Test(estimate_config, errors_carry_file_and_line)
{
    struct estimate_config c;
    char err[512];
    struct {
        const char *text, *expect;
    } cases[] = {
        {"layers = 2\nfoo = 1\n", "job.conf:2: unknown key 'foo'"},
        {"\n\nlayers = two\n", "job.conf:3: layers: bad value 'two' (accepted: a whole number"},
        {"precision = fp64\n", "job.conf:1: precision: bad value 'fp64' (accepted: bf16, fp16"},
        {"layers 96\n", "job.conf:1: expected 'key = value', got 'layers 96'"},
        {"layers =\n", "job.conf:1: expected 'key = value' with both sides non-empty"},
        {"= 3\n", "job.conf:1: expected 'key = value' with both sides non-empty"},
        {"layers = 2\nlayers = 3\n", "job.conf:2: layers: already set on line 1"},
        {"zero = 4\n", "job.conf:1: zero: bad value '4' (accepted: a whole number 0..3"},
        {"sp = maybe\n", "job.conf:1: sp: bad value 'maybe' (accepted: yes/no"},
        {"gpu = lots\n", "job.conf:1: gpu: bad value 'lots' (accepted: bytes"},
        {"micro_batch = 0\n", "job.conf:1: micro_batch: bad value '0'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(parse(&c, cases[i].text, err, sizeof err), -1, "case %zu", i);
        cr_expect(strncmp(err, cases[i].expect, strlen(cases[i].expect)) == 0, "case %zu: got '%s'",
                  i, err);
    }
}

Test(estimate_config, nul_and_long_lines)
{
    struct estimate_config c;
    char err[512];
    estimate_config_defaults(&c);
    cr_expect_eq(estimate_config_parse(&c, "layers = 2\n\0x", 13, "f", err, sizeof err), -1);
    cr_expect_str_eq(err, "f:2: NUL byte in a text file");
    char longline[2000];
    memset(longline, 'a', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    cr_expect_eq(parse(&c, longline, err, sizeof err), -1);
    cr_expect(strstr(err, "job.conf:1: line longer than") == err, "%s", err);
    /* A long comment is fine: it is cut before the length check. */
    char commented[2000] = "layers = 3 #";
    memset(commented + 12, 'x', sizeof commented - 13);
    commented[sizeof commented - 1] = '\0';
    cr_expect_eq(parse(&c, commented, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.layers, 3);
}

Test(estimate_config, load_missing_file)
{
    struct estimate_config c;
    char err[512];
    estimate_config_defaults(&c);
    cr_expect_eq(estimate_config_load(&c, "/nonexistent/x.conf", err, sizeof err), -1);
    cr_expect(strstr(err, "/nonexistent/x.conf: No such file") == err, "%s", err);
}

Test(estimate_config, consistency)
{
    struct estimate_config c;
    char err[512];
    struct {
        const char *text, *expect;
    } cases[] = {
        {"seq_len = 2\n", "give the model"},
        {"layers = 2\nhidden = 64\nseq_len = 8\n", "the architecture needs layers, hidden and "
                                                   "heads together (missing heads)"},
        {"layers = 2\nhidden = 100\nheads = 3\nseq_len = 8\n", "heads (3) must divide hidden"},
        {"layers = 2\nhidden = 64\nheads = 4\nkv_heads = 3\nseq_len = 8\n", "kv_heads (3)"},
        {"layers = 2\nhidden = 64\nheads = 4\ntp = 8\nseq_len = 8\n", "tp (8) must divide"},
        {"layers = 2\nhidden = 64\nheads = 4\npp = 3\nseq_len = 8\n", "pp (3) exceeds layers"},
        {"layers = 2\nhidden = 64\nheads = 4\n", "seq_len is needed"},
        {"params = 1B\nkv_batch = 1\nkv_context = 8\n", "the KV cache needs the architecture"},
        {"params = 1B\nprecision = fp32\nmaster_weights = yes\n", "master_weights applies"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(parse(&c, cases[i].text, err, sizeof err), 0, "case %zu: %s", i, err);
        cr_expect_eq(estimate_config_check(&c, err, sizeof err), -1, "case %zu", i);
        cr_expect(strstr(err, cases[i].expect) == err, "case %zu: got '%s'", i, err);
    }
}

/* Each key writes back a value that parses to the same thing. */
Test(estimate_config, format_round_trip)
{
    struct estimate_config a, b;
    char err[512], buf[64];
    cr_assert_eq(parse(&a,
                       "layers = 4\nhidden = 64\nheads = 4\nseq_len = 16\nprecision = fp16\n"
                       "optimizer = adam8bit\nrecompute = full\ngpu = 24g\ntokens = 1e9\n",
                       err, sizeof err),
                 0, "%s", err);
    estimate_config_defaults(&b);
    for (size_t i = 0; estimate_config_key(i); i++) {
        const char *v = estimate_config_format(&a, i, buf, sizeof buf);
        if (!strcmp(v, "auto") || (estimate_config_is_number(i) && !strcmp(v, "0")))
            continue; /* unset */
        cr_expect_eq(estimate_config_set(&b, estimate_config_key(i), v, err, sizeof err), 0,
                     "%s = %s: %s", estimate_config_key(i), v, err);
    }
    b.given = a.given;
    b.master_weights = a.master_weights;
    cr_expect(memcmp(&a, &b, sizeof a) == 0);
}

static void load_example(struct estimate_config *c, const char *name)
{
    char path[4096], err[512];
    const char *src = getenv("MEMSHIM_SOURCE_DIR");
    cr_assert(src, "MEMSHIM_SOURCE_DIR is set by the test environment");
    snprintf(path, sizeof path, "%s/examples/configs/%s", src, name);
    estimate_config_defaults(c);
    cr_assert_eq(estimate_config_load(c, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(estimate_config_check(c, err, sizeof err), 0, "%s: %s", name, err);
}

/* The shipped examples parse, and the Korthikanti et al. Table 3 jobs fit an 80 GB A100 with
 * sequence parallelism and selective recompute, as the paper reports; with tensor parallelism
 * alone the 530B and 1T first stages do not (hence the full recompute they replace). */
Test(estimate_config, examples)
{
    static const char *all[] = {"gpt2-small.conf",   "llama2-7b.conf", "llama2-70b-serve.conf",
                                "megatron-22b.conf", "gpt3-175b.conf", "mt-nlg-530b.conf",
                                "megatron-1t.conf"};
    struct estimate_config c;
    struct estimate_result r;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        load_example(&c, all[i]);
        estimate_compute(&c, &r);
        cr_expect(c.gpu && r.total <= c.gpu, "%s does not fit", all[i]);
    }
    static const char *large[] = {"mt-nlg-530b.conf", "megatron-1t.conf"};
    for (size_t i = 0; i < 2; i++) {
        load_example(&c, large[i]);
        c.sp = 0;
        c.recompute = ESTIMATE_RECOMPUTE_NONE;
        estimate_compute(&c, &r);
        cr_expect(r.total > c.gpu, "%s fits without SP and selective recompute", large[i]);
    }
}
