/* Synthetic trace writer for tests and benchmarks. See tracegen.h. */
#include "tracegen.h"

#include "memshim/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (1u << 20)

struct tracegen {
    unsigned char *buf;
    size_t len, cap;
    FILE *file;
    int failed;
    int checksums;
    uint32_t next_string, next_module, next_frame, next_thread;
};

/* The buffer to the file, after its CHECKSUM record when the generator writes them. */
static void write_out(struct tracegen *g)
{
    struct {
        struct mst_record_header h;
        struct mst_rec_checksum c;
    } ck = {.h = {.kind = MST_REC_CHECKSUM, .length = sizeof(struct mst_rec_checksum)},
            .c = {.bytes = g->len, .crc32c = mst_crc32c(0, g->buf, g->len)}};
    if (g->checksums && g->len && fwrite(&ck, sizeof ck, 1, g->file) != 1)
        g->failed = 1;
    if (fwrite(g->buf, 1, g->len, g->file) != g->len)
        g->failed = 1;
    g->len = 0;
}

static void put(struct tracegen *g, const void *p, size_t n)
{
    if (g->len + n > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < g->len + n)
            cap *= 2;
        unsigned char *b = realloc(g->buf, cap);
        if (!b) {
            g->failed = 1;
            return;
        }
        g->buf = b;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, p, n);
    g->len += n;
}

/* After each whole record (or raw bytes): a write-out never ends inside a record. */
static void record_end(struct tracegen *g)
{
    if (g->file && g->len >= FLUSH_AT)
        write_out(g);
}

static struct tracegen *start(FILE *file, const struct tracegen_header *h)
{
    struct tracegen *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->file = file;
    g->next_string = g->next_module = g->next_frame = g->next_thread = 1;
    struct mst_file_header fh = {
        .version = MST_VERSION,
        .header_size = sizeof fh,
        .pid = h ? h->pid : 1,
        .rank = h ? h->rank : MST_NO_RANK,
        .stack_depth = h ? h->stack_depth : 24,
        .clock_base_ns = 1000000000ull,
        .wall_base_ns = 1700000000000000000ull,
        .flags = h ? h->flags : MST_FILE_F_STACKS,
    };
    memcpy(fh.magic, MST_MAGIC, MST_MAGIC_LEN);
    snprintf(fh.host, sizeof fh.host, "%s", h && h->host ? h->host : "testhost");
    struct mst_file_label label = {{0}};
    if (h && h->label) {
        snprintf(label.label, sizeof label.label, "%s", h->label);
        fh.header_size = sizeof fh + sizeof label;
    }
    put(g, &fh, sizeof fh);
    if (h && h->label)
        put(g, &label, sizeof label);
    if (file && h && h->checksums) { /* the header stands before every write-out */
        write_out(g);
        g->checksums = 1;
    }
    return g;
}

struct tracegen *tracegen_new_memory(const struct tracegen_header *h)
{
    return start(NULL, h);
}

struct tracegen *tracegen_new_file(const char *path, const struct tracegen_header *h)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    struct tracegen *g = start(f, h);
    if (!g)
        fclose(f);
    return g;
}

int tracegen_finish(struct tracegen *g)
{
    if (g->file) {
        write_out(g);
        if (fclose(g->file) != 0)
            g->failed = 1;
        g->file = NULL;
    }
    return g->failed ? -1 : 0;
}

void tracegen_free(struct tracegen *g)
{
    if (!g)
        return;
    if (g->file)
        tracegen_finish(g);
    free(g->buf);
    free(g);
}

const void *tracegen_data(const struct tracegen *g, size_t *size)
{
    *size = g->len;
    return g->buf;
}

void tracegen_raw(struct tracegen *g, uint16_t kind, const void *payload, uint32_t len)
{
    struct mst_record_header h = {.kind = kind, .length = len};
    put(g, &h, sizeof h);
    put(g, payload, len);
    record_end(g);
}

void tracegen_bytes(struct tracegen *g, const void *bytes, size_t len)
{
    put(g, bytes, len);
    record_end(g);
}

/* A fixed payload followed by variable bytes. */
static void record_with_tail(struct tracegen *g, uint16_t kind, const void *fixed, uint32_t n,
                             const char *tail)
{
    uint32_t t = tail ? (uint32_t)strlen(tail) : 0;
    struct mst_record_header h = {.kind = kind, .length = n + t};
    put(g, &h, sizeof h);
    put(g, fixed, n);
    put(g, tail, t);
    record_end(g);
}

uint32_t tracegen_string(struct tracegen *g, const char *text)
{
    struct mst_rec_string s = {.id = g->next_string++};
    record_with_tail(g, MST_REC_STRING, &s, sizeof s, text);
    return s.id;
}

uint32_t tracegen_module(struct tracegen *g, const char *path, uint64_t base, uint64_t size)
{
    struct mst_rec_module m = {.id = g->next_module++, .base = base, .size = size};
    record_with_tail(g, MST_REC_MODULE, &m, sizeof m, path);
    return m.id;
}

uint32_t tracegen_python_module(struct tracegen *g, const char *path)
{
    struct mst_rec_module m = {.id = g->next_module++, .flags = MST_MODULE_F_PYTHON};
    record_with_tail(g, MST_REC_MODULE, &m, sizeof m, path);
    return m.id;
}

uint32_t tracegen_frame(struct tracegen *g, uint32_t parent, uint32_t module, const char *symbol,
                        uint64_t ip, uint64_t module_offset)
{
    uint32_t sym = symbol ? tracegen_string(g, symbol) : 0;
    struct mst_rec_frame f = {.id = g->next_frame++,
                              .parent = parent,
                              .module_id = module,
                              .symbol_id = sym,
                              .ip = ip,
                              .module_offset = module_offset};
    tracegen_raw(g, MST_REC_FRAME, &f, sizeof f);
    return f.id;
}

uint32_t tracegen_thread(struct tracegen *g, uint32_t os_tid, const char *name)
{
    struct mst_rec_thread t = {.id = g->next_thread++, .os_tid = os_tid};
    record_with_tail(g, MST_REC_THREAD, &t, sizeof t, name);
    return t.id;
}

void tracegen_device(struct tracegen *g, uint32_t ordinal, const char *name, uint64_t total,
                     uint64_t ceiling)
{
    struct mst_rec_device d = {.ordinal = ordinal,
                               .cc_major = 9,
                               .cc_minor = 0,
                               .total_bytes = total,
                               .ceiling_bytes = ceiling};
    record_with_tail(g, MST_REC_DEVICE, &d, sizeof d, name);
}

void tracegen_alloc(struct tracegen *g, const struct mst_rec_alloc *a)
{
    const uint64_t unrequested = a->size - a->requested;
    if (!mst_alloc_fits_short(a->stream, unrequested)) {
        tracegen_raw(g, MST_REC_ALLOC, a, sizeof *a);
        return;
    }
    struct mst_rec_alloc_short s = {.time_ns = a->time_ns,
                                    .addr = a->addr,
                                    .size = a->size,
                                    .unrequested = (uint32_t)unrequested,
                                    .thread = a->thread,
                                    .site = a->site,
                                    .phase = a->phase,
                                    .kind = a->kind,
                                    .category = a->category,
                                    .device = a->device,
                                    .flags = a->flags};
    tracegen_raw(g, MST_REC_ALLOC, &s, sizeof s);
}

void tracegen_malloc(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t addr,
                     uint64_t size, uint8_t category, uint32_t site, uint32_t phase)
{
    struct mst_rec_alloc a = {.time_ns = time_ns,
                              .addr = addr,
                              .size = size,
                              .requested = size,
                              .thread = thread,
                              .site = site,
                              .phase = phase,
                              .kind = MST_KIND_CUDA_MALLOC,
                              .category = category};
    tracegen_alloc(g, &a);
}

void tracegen_dealloc(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t addr)
{
    /* the short FREE, as the shim writes a synchronous free */
    struct mst_rec_free_short f = {
        .time_ns = time_ns, .addr = addr, .thread = thread, .kind = MST_KIND_CUDA_MALLOC};
    tracegen_raw(g, MST_REC_FREE, &f, sizeof f);
}

void tracegen_phase(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint32_t name_id,
                    int push)
{
    struct mst_rec_phase p = {.time_ns = time_ns, .thread = thread, .name_id = name_id};
    tracegen_raw(g, push ? MST_REC_PHASE_PUSH : MST_REC_PHASE_POP, &p, sizeof p);
}

void tracegen_step(struct tracegen *g, uint64_t time_ns, uint32_t thread, uint64_t step)
{
    struct mst_rec_step s = {.time_ns = time_ns, .step = step, .thread = thread};
    tracegen_raw(g, MST_REC_STEP, &s, sizeof s);
}

void tracegen_ceiling(struct tracegen *g, uint64_t time_ns, uint64_t ceiling, uint8_t policy)
{
    struct mst_rec_ceiling c = {.time_ns = time_ns, .ceiling_bytes = ceiling, .policy = policy};
    tracegen_raw(g, MST_REC_CEILING, &c, sizeof c);
}

void tracegen_oom(struct tracegen *g, const struct mst_rec_oom *o)
{
    tracegen_raw(g, MST_REC_OOM, o, sizeof *o);
}

void tracegen_retag(struct tracegen *g, uint64_t time_ns, uint64_t addr, uint8_t category)
{
    struct mst_rec_retag r = {.time_ns = time_ns, .addr = addr, .category = category};
    tracegen_raw(g, MST_REC_RETAG, &r, sizeof r);
}

void tracegen_residency(struct tracegen *g, const struct mst_rec_residency *r)
{
    tracegen_raw(g, MST_REC_RESIDENCY, r, sizeof *r);
}

void tracegen_summary(struct tracegen *g, const struct mst_rec_summary *s)
{
    tracegen_raw(g, MST_REC_SUMMARY, s, sizeof *s);
}

void tracegen_op(struct tracegen *g, const struct mst_rec_op *op)
{
    tracegen_raw(g, MST_REC_OP, op, sizeof *op);
}

void tracegen_access(struct tracegen *g, uint64_t addr, uint64_t size, uint64_t alloc_addr,
                     uint8_t mode)
{
    struct mst_rec_access a = {.addr = addr, .size = size, .alloc_addr = alloc_addr, .mode = mode};
    tracegen_raw(g, MST_REC_ACCESS, &a, sizeof a);
}

void tracegen_measure(struct tracegen *g, uint64_t time_ns, uint64_t h2d_bytes_per_s,
                      uint64_t d2h_bytes_per_s, uint64_t gemm_flops_per_s)
{
    struct mst_rec_measure m = {.time_ns = time_ns,
                                .h2d_bytes_per_s = h2d_bytes_per_s,
                                .d2h_bytes_per_s = d2h_bytes_per_s,
                                .gemm_flops_per_s = gemm_flops_per_s};
    tracegen_raw(g, MST_REC_MEASURE, &m, sizeof m);
}

/* ---- a synthetic training run ------------------------------------------------------------- */

struct run {
    struct tracegen *g;
    const struct tracegen_training *t;
    uint64_t now, dt, next_addr;
    /* freed address ranges, reused last-in first-out for the same size as cudaMalloc does */
    struct freed {
        uint64_t addr, size;
    } freed[64];
    unsigned nfreed;
    uint32_t thread;
    uint32_t site_param, site_act, site_grad, site_opt, site_tmp;
    uint32_t ph_forward, ph_backward, ph_optimizer;
    uint64_t resident, by_category[MST_CATEGORY_MAX];
    const uint64_t *params;
    uint32_t op_gemm, op_adam;
};

static uint64_t tick(struct run *r)
{
    return r->now += r->dt;
}

static uint64_t reuse(struct run *r, uint64_t size)
{
    for (unsigned i = r->nfreed; i-- > 0;) {
        if (r->freed[i].size != size)
            continue;
        uint64_t addr = r->freed[i].addr;
        r->freed[i] = r->freed[--r->nfreed];
        return addr;
    }
    return 0;
}

static uint64_t run_alloc(struct run *r, uint64_t size, uint8_t category, uint32_t site,
                          uint32_t phase)
{
    uint64_t addr = reuse(r, size);
    if (!addr) {
        addr = r->next_addr;
        r->next_addr += (size + 0xfffff) & ~0xfffffull;
    }
    tracegen_malloc(r->g, tick(r), r->thread, addr, size, r->t->unknown ? 0 : category, site,
                    phase);
    r->resident += size;
    r->by_category[category] += size;
    return addr;
}

static void run_free(struct run *r, uint64_t addr, uint64_t size, uint8_t category)
{
    tracegen_dealloc(r->g, tick(r), r->thread, addr);
    if (r->nfreed == sizeof r->freed / sizeof r->freed[0])
        memmove(r->freed, r->freed + 1, sizeof r->freed - sizeof r->freed[0]);
    else
        r->nfreed++;
    r->freed[r->nfreed - 1] = (struct freed){addr, size};
    r->resident -= size;
    r->by_category[category] -= size;
}

static void run_temporary(struct run *r, uint32_t phase)
{
    uint64_t size = r->t->activation_bytes / 4 + 1;
    for (uint64_t i = 0; i < r->t->temporaries; i++) {
        uint64_t a = run_alloc(r, size, MST_CAT_TEMPORARY, r->site_tmp, phase);
        run_free(r, a, size, MST_CAT_TEMPORARY);
    }
}

static void run_oom(struct run *r)
{
    struct mst_rec_oom o = {.time_ns = tick(r),
                            .request = r->t->activation_bytes * 100,
                            .resident = r->resident,
                            .thread = r->thread,
                            .site = r->site_act,
                            .phase = r->ph_forward,
                            .kind = MST_KIND_CUDA_MALLOC};
    memcpy(o.by_category, r->by_category, sizeof o.by_category);
    tracegen_oom(r->g, &o);
}

/* One op over `n` whole allocations of `size[i]` bytes at `addr[i]`, touched in `mode[i]`. */
static void run_op(struct run *r, uint8_t kind, uint32_t name, uint64_t flops, size_t n,
                   const uint64_t *addr, const uint64_t *size, const uint8_t *mode)
{
    if (!r->t->accesses)
        return;
    struct mst_rec_op op = {.time_ns = tick(r),
                            .flops = flops,
                            .thread = r->thread,
                            .name_id = name,
                            .naccess = (uint32_t)n,
                            .kind = kind,
                            .dtype_a = 0xff,
                            .dtype_b = 0xff,
                            .dtype_c = 0xff};
    tracegen_op(r->g, &op);
    for (size_t i = 0; i < n; i++)
        tracegen_access(r->g, addr[i], size[i], addr[i], mode[i]);
}

static void run_gemm(struct run *r, uint64_t in1, uint64_t s1, uint64_t in2, uint64_t s2,
                     uint64_t out, uint64_t so)
{
    uint64_t addr[] = {in1, in2, out}, size[] = {s1, s2, so};
    uint8_t mode[] = {MST_ACCESS_READ, MST_ACCESS_READ, MST_ACCESS_WRITE};
    run_op(r, MST_OP_GEMM, r->op_gemm, 512 * so, 3, addr, size, mode); /* as if K = 256 */
}

static void run_define(struct run *r)
{
    struct tracegen *g = r->g;
    r->thread = tracegen_thread(g, 4242, "trainer");
    tracegen_device(g, 0, "Synthetic GPU", 80ull << 30, 0);
    uint32_t mod = tracegen_module(g, "/opt/train/libtrain.so", 0x7f0000000000ull, 1 << 20);
    uint32_t main_f = tracegen_frame(g, 0, mod, "main", 0x7f0000001000ull, 0x1000);
    uint32_t step_f = tracegen_frame(g, main_f, mod, "_Z10train_stepi", 0x7f0000002000ull, 0x2000);
    r->site_param =
        tracegen_frame(g, main_f, mod, "_ZN5model11init_paramsEv", 0x7f0000003000ull, 0x3000);
    r->site_act = tracegen_frame(g, step_f, mod, "_ZN5model6Linear7forwardERKN2at6TensorE",
                                 0x7f0000004000ull, 0x4000);
    r->site_grad =
        tracegen_frame(g, step_f, mod, "_ZN5model6Linear8backwardEv", 0x7f0000005000ull, 0x5000);
    r->site_opt =
        tracegen_frame(g, step_f, mod, "_ZN5model4Adam4initEv", 0x7f0000006000ull, 0x6000);
    r->site_tmp = tracegen_frame(g, step_f, mod, "_ZN4gemm9workspace17h0123456789abcdefE",
                                 0x7f0000007000ull, 0x7000);
    r->ph_forward = tracegen_string(g, "forward");
    r->ph_backward = tracegen_string(g, "backward");
    r->ph_optimizer = tracegen_string(g, "optimizer");
    if (r->t->accesses) {
        r->op_gemm = tracegen_string(g, "cublasSgemm_v2");
        r->op_adam = tracegen_string(g, "adam_step_kernel");
    }
}

static void run_step(struct run *r, uint32_t s, uint64_t *opt, uint64_t *acts, uint64_t *grads)
{
    const struct tracegen_training *t = r->t;
    uint32_t L = t->layers;
    tracegen_step(r->g, tick(r), r->thread, s);
    tracegen_phase(r->g, tick(r), r->thread, r->ph_forward, 1);
    for (uint32_t i = 0; i < L; i++) {
        acts[i] = run_alloc(r, t->activation_bytes, MST_CAT_ACTIVATION, r->site_act, r->ph_forward);
        run_temporary(r, r->ph_forward);
        uint64_t in = i ? acts[i - 1] : r->params[i];
        run_gemm(r, r->params[i], t->layer_bytes, in, i ? t->activation_bytes : t->layer_bytes,
                 acts[i], t->activation_bytes);
    }
    if (t->oom_at_step > 0 && (uint32_t)t->oom_at_step == s)
        run_oom(r);
    tracegen_phase(r->g, tick(r), r->thread, r->ph_forward, 0);
    tracegen_phase(r->g, tick(r), r->thread, r->ph_backward, 1);
    for (uint32_t i = L; i-- > 0;) {
        grads[i] = run_alloc(r, t->layer_bytes, MST_CAT_GRADIENT, r->site_grad, r->ph_backward);
        run_temporary(r, r->ph_backward);
        run_gemm(r, acts[i], t->activation_bytes, r->params[i], t->layer_bytes, grads[i],
                 t->layer_bytes);
        if (!(t->leak && i == 0))
            run_free(r, acts[i], t->activation_bytes, MST_CAT_ACTIVATION);
    }
    tracegen_phase(r->g, tick(r), r->thread, r->ph_backward, 0);
    tracegen_phase(r->g, tick(r), r->thread, r->ph_optimizer, 1);
    for (uint32_t i = 0; s == 0 && i < L; i++) {
        opt[2 * i] =
            run_alloc(r, t->layer_bytes, MST_CAT_OPTIMIZER_STATE, r->site_opt, r->ph_optimizer);
        opt[2 * i + 1] =
            run_alloc(r, t->layer_bytes, MST_CAT_OPTIMIZER_STATE, r->site_opt, r->ph_optimizer);
    }
    for (uint32_t i = 0; i < L; i++) {
        uint64_t addr[] = {r->params[i], grads[i], opt[2 * i], opt[2 * i + 1]};
        uint64_t size[] = {t->layer_bytes, t->layer_bytes, t->layer_bytes, t->layer_bytes};
        uint8_t rw = MST_ACCESS_READ | MST_ACCESS_WRITE;
        uint8_t mode[] = {rw, MST_ACCESS_READ, rw, rw};
        run_op(r, MST_OP_KERNEL, r->op_adam, 0, 4, addr, size, mode);
    }
    tracegen_phase(r->g, tick(r), r->thread, r->ph_optimizer, 0);
    for (uint32_t i = 0; i < L; i++)
        run_free(r, grads[i], t->layer_bytes, MST_CAT_GRADIENT);
}

void tracegen_training_run(struct tracegen *g, const struct tracegen_training *t)
{
    struct run r = {.g = g, .t = t, .dt = t->dt_ns ? t->dt_ns : 1000, .next_addr = 1ull << 40};
    run_define(&r);
    uint32_t L = t->layers;
    uint64_t *params = calloc(L, sizeof *params), *opt = calloc(2 * (size_t)L, sizeof *opt);
    uint64_t *acts = calloc(L, sizeof *acts), *grads = calloc(L, sizeof *grads);
    if (!params || !opt || !acts || !grads) {
        g->failed = 1;
    } else {
        for (uint32_t i = 0; i < L; i++)
            params[i] = run_alloc(&r, t->layer_bytes, MST_CAT_PARAMETER, r.site_param, 0);
        r.params = params;
        for (uint32_t s = 0; s < t->steps; s++)
            run_step(&r, s, opt, acts, grads);
        for (uint32_t i = 0; t->free_at_exit && i < L; i++) {
            run_free(&r, params[i], t->layer_bytes, MST_CAT_PARAMETER);
            for (uint32_t k = 0; t->steps && k < 2; k++)
                run_free(&r, opt[2 * i + k], t->layer_bytes, MST_CAT_OPTIMIZER_STATE);
        }
    }
    free(params);
    free(opt);
    free(acts);
    free(grads);
}
