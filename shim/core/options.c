/* options: the table and its parsers; see options.h. */
#include "options.h"

#include "compat.h"
#include "costs_parse.h"
#include "log.h"
#include "secure_env.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum opt_type { OPT_T_STRING, OPT_T_SIZE, OPT_T_UINT, OPT_T_CHOICE, OPT_T_COSTS };

#define OPT_STR_MAX 1024

struct opt_desc {
    enum options_id id; /* equals the row's index */
    const char *name;
    enum opt_type type;
    const char *def;      /* default, in the same syntax a user writes */
    const char *expected; /* accepted forms, quoted in the error message */
    const char *help;
    const char *const *choices; /* OPT_T_CHOICE, NULL-terminated */
    uint64_t min, max;          /* OPT_T_UINT; max also bounds an OPT_T_SIZE */
    int percent;                /* OPT_T_SIZE: `N%` allowed */
};

struct opt_value {
    char str[OPT_STR_MAX];
    uint64_t num;
    struct opt_size size;
};

static const char *const opt_policies[] = {"fail", "spill", "recompute", "auto", NULL};
static const char *const opt_logs[] = {"quiet", "info", "debug", NULL};
static const char *const opt_access[] = {"off", "gemm", "all", NULL};
static const char *const opt_tensors[] = {"auto", "on", "off", NULL};
static const char *const opt_on_off[] = {"on", "off", NULL};
/* In the order of pystack.h's PYSTACK_* values. */
static const char *const opt_py_stacks[] = {"auto", "on", "off", "1", "0", NULL};

#define OPT_SIZE_FORMS    "bytes with an optional k/m/g/t suffix (base 1024)"
#define OPT_SPILL_MIN_MAX (1ull << 40)

/* clang-format off */
static const struct opt_desc opt_table[OPT_COUNT] = {
    {OPT_TRACE, "MEMSHIM_TRACE", OPT_T_STRING, "", "a file path",
     "Trace file to write; `%p` is replaced by the pid, `%r` by the rank (the first set of "
     "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, LOCAL_RANK; 0 when none is). A name "
     "another live process writes gets `.PID` before its extension. Unset: no trace. Ignored "
     "in a setuid/setgid program.",
     NULL, 0, 0, 0},
    {OPT_LIMIT, "MEMSHIM_LIMIT", OPT_T_SIZE, "0", OPT_SIZE_FORMS " or N% of device memory",
     "Ceiling on the bytes resident on each device; 0 means no ceiling.", NULL, 0, 0, 1},
    {OPT_LIMIT_DEVICE, "MEMSHIM_LIMIT_<ordinal>", OPT_T_SIZE, "", OPT_SIZE_FORMS
     " or N% of device memory",
     "Ceiling for one device, ordinals 0 to 31 (e.g. `MEMSHIM_LIMIT_1`), overriding "
     "MEMSHIM_LIMIT.", NULL, 0, 0, 1},
    {OPT_POLICY, "MEMSHIM_POLICY", OPT_T_CHOICE, "fail", "fail, spill, recompute or auto",
     "What happens at the ceiling: `fail` returns the API's out-of-memory error; `spill` moves "
     "other allocations to host memory behind their unchanged addresses (cudaMalloc and "
     "cuMemAlloc, served by the shim with the virtual-memory API); `recompute` also drops "
     "outputs of recorded cuBLAS GEMMs and replays them before their next use (see Recompute); "
     "`auto` chooses per victim, spill or replay, by measured cost (see auto policy).",
     opt_policies, 0, 0, 0},
    {OPT_HOST_LIMIT, "MEMSHIM_HOST_LIMIT", OPT_T_SIZE, "50%", OPT_SIZE_FORMS
     " or N% of host memory",
     "Ceiling on host memory held for the program: bytes spilled from the device and "
     "host-located memory created through the shim (cuMemCreate with a host location); 0 means "
     "no ceiling.", NULL, 0, 0, 1},
    {OPT_STACK_DEPTH, "MEMSHIM_STACK_DEPTH", OPT_T_UINT, "24", "an integer from 0 to 64",
     "Frames recorded per call site; 0 turns call stacks off. Stacks are captured only with "
     "MEMSHIM_TRACE, MEMSHIM_REPORT, a ceiling or a policy other than `fail`: nothing else "
     "reads them.", NULL, 0, OPT_MAX_STACK_DEPTH, 0},
    {OPT_RULES, "MEMSHIM_RULES", OPT_T_STRING, "", "a file path",
     "Rules file (at most 1 MiB): lines `category pattern` or `readonly KERNEL_GLOB "
     "INDEX[,INDEX...]`, checked before the built-in rules; `#` after a space starts a comment. "
     "Ignored in a setuid/setgid program.", NULL, 0, 0, 0},
    {OPT_STEP_RANGE, "MEMSHIM_STEP_RANGE", OPT_T_STRING, "step*", "a glob pattern",
     "NVTX ranges whose name matches this glob mark training steps.", NULL, 0, 0, 0},
    {OPT_FLUSH_MS, "MEMSHIM_FLUSH_MS", OPT_T_UINT, "200", "milliseconds from 1 to 60000",
     "Longest time a trace record waits in memory before it is written.", NULL, 1, 60000, 0},
    {OPT_LOG, "MEMSHIM_LOG", OPT_T_CHOICE, "quiet", "quiet, info or debug",
     "How much the shim says on stderr (errors and out-of-memory screens always).", opt_logs,
     0, 0, 0},
    {OPT_REPORT, "MEMSHIM_REPORT", OPT_T_STRING, "", "a file path or `stderr`",
     "Write an exit summary (allocations, frees, peak, resident by category, OOMs) there, from "
     "a process that used CUDA; `%p`/`%r` and a name taken as in MEMSHIM_TRACE. Ignored in a "
     "setuid/setgid program.", NULL, 0, 0, 0},
    {OPT_ACCESS, "MEMSHIM_ACCESS", OPT_T_CHOICE, "all", "off, gemm or all",
     "Which operations record the memory they touch: off none, gemm cuBLAS/cuBLASLt GEMMs, all "
     "also copies, sets and kernel launches (spill needs all to restore before them). Without "
     "a trace or a spill/recompute policy nothing reads the records: only the cuBLAS "
     "workspaces are noted then, for their category.",
     opt_access, 0, 0, 0},
    {OPT_SPILL_MIN, "MEMSHIM_SPILL_MIN", OPT_T_SIZE, "2m", OPT_SIZE_FORMS ", at most 1t",
     "Under `spill`, `recompute` and `auto`: allocations at least this large get their own "
     "mapped range (spilled or dropped alone); smaller ones share mapped chunks of this size "
     "(rounded up to the allocation granularity), and a chunk moves whole (under `recompute` "
     "and `auto` the GEMM outputs among its blocks are dropped with it).",
     NULL, 0,
     OPT_SPILL_MIN_MAX, 0},
    {OPT_HOST_USE, "MEMSHIM_HOST_USE", OPT_T_CHOICE, "on", "on or off",
     "Under `spill`, `recompute` and `auto`, when the device has host-located virtual memory: "
     "a spilled range that an operation needs and that cannot be brought back (its other "
     "ranges already fill the ceiling) is used where it is, in host memory mapped at its "
     "address, over the bus; each such use is counted and traced. `off`: that operation fails "
     "with the API's out-of-memory error instead.",
     opt_on_off, 0, 0, 0},
    {OPT_PY_STACKS, "MEMSHIM_PY_STACKS", OPT_T_CHOICE, "auto", "auto, on, off, 1 or 0",
     "Python frames (file, line, function) in call sites, for threads running Python, "
     "in place of the interpreter's native frames; `auto`: when the process has a Python "
     "3.9+ interpreter. Needs MEMSHIM_STACK_DEPTH > 0.", opt_py_stacks, 0, 0, 0},
    {OPT_COSTS, "MEMSHIM_COSTS", OPT_T_COSTS, "", COSTS_FORMS,
     "Under `auto`: the cost model's rates instead of measuring them at the first shortfall "
     "(host-to-device and device-to-host bytes/s, SGEMM FLOP/s); rates left out are measured.",
     NULL, 0, 0, 0},
    {OPT_LABEL, "MEMSHIM_LABEL", OPT_T_STRING, "", "text of up to 63 bytes",
     "The run's setting, written into the trace: a folder of traces with labels is a table of "
     "runs, one row per label, not the ranks of one job. `key=value` pairs joined by commas "
     "(`micro_batch=8,seq_len=1024`) are also estimate keys, set per row by `summary "
     "--config`.", NULL, 0, 0, 0},
    {OPT_TENSORS, "MEMSHIM_TENSORS", OPT_T_CHOICE, "auto", "auto, on or off",
     "Tensors inside PyTorch's CUDA caching allocator: each block it hands out and takes "
     "back is recorded, so categories are per tensor, not per segment, with its autograd node "
     "(a backward tensor is named by its forward operation's line); `auto`: when the "
     "process loads PyTorch's CUDA library; `on`: the same, and says so when it does not.",
     opt_tensors, 0, 0, 0},
    {OPT_TRACE_COMPACT, "MEMSHIM_TRACE_COMPACT", OPT_T_CHOICE, "on", "on or off",
     "An operation (kernel launch, copy, set, GEMM) a thread repeats with the same operands is "
     "written as a 16-byte reference to its first record; `off` writes every one in full (the "
     "analyzer reads both alike).", opt_on_off, 0, 0, 0},
};
/* clang-format on */

static struct opt_value opt_values[OPT_COUNT];
static struct opt_size opt_limit_dev[MS_MAX_DEVICES];
static unsigned char opt_limit_dev_set[MS_MAX_DEVICES];

/* ---- parsers ---- */

int options_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int opt_parse_percent(const char *s, size_t len, struct opt_size *out)
{
    /* N or N.D... up to 100, as parts per million; no locale-dependent strtod. */
    uint64_t whole = 0, frac = 0, scale = 1000000;
    size_t i = 0;
    if (len == 0 || !isdigit((unsigned char)s[0]))
        return -1;
    for (; i < len && isdigit((unsigned char)s[i]); i++) {
        whole = whole * 10 + (uint64_t)(s[i] - '0');
        if (whole > 100)
            return -1;
    }
    if (i < len && s[i] == '.') {
        for (i++; i < len && isdigit((unsigned char)s[i]); i++) {
            if (scale >= 10) {
                scale /= 10;
                frac += (uint64_t)(s[i] - '0') * scale;
            }
        }
        frac /= 100; /* scale counted in 1e-6 of a percent */
    }
    if (i != len)
        return -1;
    uint64_t ppm = whole * 10000 + frac;
    if (ppm == 0 || ppm > 1000000)
        return -1;
    out->bytes = 0;
    out->ppm = (uint32_t)ppm;
    return 0;
}

static int opt_suffix_shift(const char *suf)
{
    static const char units[] = "kmgt";
    if (*suf == '\0')
        return 0;
    const char *u = strchr(units, tolower((unsigned char)*suf));
    if (!u || *u == '\0')
        return -1;
    int shift = 10 * (int)(u - units + 1);
    suf++;
    /* Accept k, kb, kib (any case): people write all three. */
    if (tolower((unsigned char)*suf) == 'i')
        suf++;
    if (tolower((unsigned char)*suf) == 'b')
        suf++;
    return *suf == '\0' ? shift : -1;
}

int options_parse_size(const char *s, int allow_percent, struct opt_size *out)
{
    if (!s)
        return -1;
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == '%')
        return allow_percent ? opt_parse_percent(s, len - 1, out) : -1;
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    int shift = opt_suffix_shift(end);
    if (shift < 0 || (shift > 0 && v > (UINT64_MAX >> shift)))
        return -1;
    out->bytes = (uint64_t)v << shift;
    out->ppm = 0;
    return 0;
}

static int opt_parse_choice(const struct opt_desc *d, const char *s, uint64_t *out)
{
    for (uint64_t i = 0; d->choices[i]; i++) {
        if (strcasecmp(s, d->choices[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return -1;
}

static int opt_parse(const struct opt_desc *d, const char *s, struct opt_value *v)
{
    switch (d->type) {
    case OPT_T_STRING:
        if (strlen(s) >= sizeof v->str) {
            errno = ENAMETOOLONG;
            return -1;
        }
        strcpy(v->str, s);
        return 0;
    case OPT_T_SIZE:
        /* max: a bound for sizes that are rounded up to powers of two later */
        if (options_parse_size(s, d->percent, &v->size) < 0 || (d->max && v->size.bytes > d->max))
            return -1;
        return 0;
    case OPT_T_UINT:
        return options_parse_uint(s, d->min, d->max, &v->num);
    case OPT_T_CHOICE:
        return opt_parse_choice(d, s, &v->num);
    case OPT_T_COSTS: {
        /* Checked here, so that a bad value is reported at load; measure.c parses it again. */
        struct costs_rates r;
        if (strlen(s) >= sizeof v->str) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (costs_parse(s, &r) != 0)
            return -1;
        strcpy(v->str, s);
        return 0;
    }
    }
    return -1;
}

/* ---- table access ---- */

static void opt_complain(const struct opt_desc *d, int device, const char *value)
{
    int too_long = errno == ENAMETOOLONG;
    char name[64];
    if (d->id == OPT_LIMIT_DEVICE)
        snprintf(name, sizeof name, "MEMSHIM_LIMIT_%d", device);
    else
        snprintf(name, sizeof name, "%s", d->name);
    if (too_long)
        log_error("%s=%.64s...: longer than %d characters; using the default (%s)", name, value,
                  OPT_STR_MAX - 1, d->def[0] ? d->def : "unset");
    else
        log_error("%s=%.200s: expected %s; using the default (%s)", name, value, d->expected,
                  d->def[0] ? d->def : "unset");
}

int options_set(enum options_id id, int device, const char *value)
{
    const struct opt_desc *d = &opt_table[id];
    struct opt_value v = opt_values[id];
    errno = 0;
    if (opt_parse(d, value, &v) < 0) {
        opt_complain(d, device, value);
        return -1;
    }
    if (id == OPT_LIMIT_DEVICE) {
        if (device < 0 || device >= MS_MAX_DEVICES)
            return -1;
        opt_limit_dev[device] = v.size;
        opt_limit_dev_set[device] = 1;
        return 0;
    }
    opt_values[id] = v;
    return 0;
}

void options_reset(void)
{
    memset(opt_values, 0, sizeof opt_values);
    memset(opt_limit_dev, 0, sizeof opt_limit_dev);
    memset(opt_limit_dev_set, 0, sizeof opt_limit_dev_set);
    for (int i = 0; i < OPT_COUNT; i++) {
        if (i != OPT_LIMIT_DEVICE)
            opt_parse(&opt_table[i], opt_table[i].def, &opt_values[i]);
    }
}

/* Options that open, create or print a file: not read in a privileged program. */
static int opt_names_file(enum options_id id)
{
    return id == OPT_TRACE || id == OPT_RULES || id == OPT_REPORT;
}

void options_load(void)
{
    options_reset();
    for (int i = 0; i < OPT_COUNT; i++) {
        if (i == OPT_LIMIT_DEVICE)
            continue;
        const char *v = opt_names_file((enum options_id)i) ? secure_env_get(opt_table[i].name)
                                                           : getenv(opt_table[i].name);
        if (v)
            options_set((enum options_id)i, 0, v);
    }
    for (int dev = 0; dev < MS_MAX_DEVICES; dev++) {
        char name[32];
        snprintf(name, sizeof name, "MEMSHIM_LIMIT_%d", dev);
        const char *v = getenv(name);
        if (v)
            options_set(OPT_LIMIT_DEVICE, dev, v);
    }
}

const char *options_name(enum options_id id)
{
    return opt_table[id].name;
}

const char *options_str(enum options_id id)
{
    return opt_values[id].str;
}

uint64_t options_uint(enum options_id id)
{
    if (opt_table[id].type == OPT_T_SIZE)
        return opt_values[id].size.bytes;
    return opt_values[id].num;
}

struct opt_size options_size(enum options_id id)
{
    return opt_values[id].size;
}

static struct opt_size opt_limit_of(int device)
{
    if (device >= 0 && device < MS_MAX_DEVICES && opt_limit_dev_set[device])
        return opt_limit_dev[device];
    return opt_values[OPT_LIMIT].size;
}

uint64_t options_limit(int device, uint64_t total)
{
    struct opt_size s = opt_limit_of(device);
    if (s.ppm == 0)
        return s.bytes;
    /* Round down, never to 0 (0 would mean "no ceiling"). */
    uint64_t b = (uint64_t)((unsigned __int128)total * s.ppm / 1000000u);
    return total && !b ? 1 : b;
}

int options_limit_is_percent(int device)
{
    return opt_limit_of(device).ppm != 0;
}

/* ---- README table ---- */

size_t options_format_env_table(char *buf, size_t size)
{
    size_t n = 0;
#define OPT_EMIT(...)                                                                              \
    n += (size_t)snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, __VA_ARGS__)
    OPT_EMIT("## Environment variables\n\n");
    OPT_EMIT("Generated from `shim/core/options.c` (`build/tests/gen_env_table`); "
             "read once when the library loads. A bad value prints one line naming the variable "
             "and the accepted forms, and the default is used.\n\n");
    OPT_EMIT("| Variable | Default | Accepted | Meaning |\n|---|---|---|---|\n");
    for (int i = 0; i < OPT_COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];
        OPT_EMIT("| `%s` | %s%s%s | %s | %s |\n", d->name, d->def[0] ? "`" : "",
                 d->def[0] ? d->def : "unset", d->def[0] ? "`" : "", d->expected, d->help);
    }
#undef OPT_EMIT
    return n;
}
