#include "export_memviz.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "pickle.h"
#include "table.h"

#define MAX_DEVICES   256
#define MAX_FRAMES    1024      /* a site deeper than this is cut (the shim records ~24) */
#define SMALL_SEGMENT (1 << 20) /* PyTorch calls segments up to 1 MiB 'small' */

/* Strings every entry repeats (keys, actions, categories): written once per device, then
 * fetched from the memo, as Python's pickler does for interned strings. */
enum word {
    W_ACTION,
    W_ADDR,
    W_SIZE,
    W_STREAM,
    W_TIME_US,
    W_FRAMES,
    W_CATEGORY,
    W_DEVICE_FREE,
    W_MEMSHIM_EVENT,
    W_FILENAME,
    W_LINE,
    W_NAME,
    W_ALLOC,
    W_SEGMENT_ALLOC,
    W_FREE_REQUESTED,
    W_FREE_COMPLETED,
    W_SEGMENT_FREE,
    W_OOM,
    W_ANNOTATE,
    W_USER_METADATA,
    W_CATEGORIES,
    W_RESIDENCY = W_CATEGORIES + MST_CATEGORY_MAX, /* enum mst_residency_event names follow */
    W_COUNT = W_RESIDENCY + MST_RES_LAST + 1,
};

static const char *word_text(int w)
{
    static const char *const text[] = {
        "action",         "addr",         "size",        "stream",        "time_us",
        "frames",         "category",     "device_free", "memshim_event", "filename",
        "line",           "name",         "alloc",       "segment_alloc", "free_requested",
        "free_completed", "segment_free", "oom",         "annotate",      "user_metadata"};
    if (w < W_CATEGORIES)
        return text[w];
    if (w < W_RESIDENCY)
        return reader_category_name((unsigned)(w - W_CATEGORIES));
    return reader_residency_name((unsigned)(w - W_RESIDENCY));
}

/* The entries of one device, written to a temporary file while the replay interleaves
 * devices, and the memo ids (+ 1) of what was written there: frames lists by site, words. */
struct device_trace {
    FILE *tmp;
    struct pickle_writer w;
    uint32_t *memo;
    size_t memo_len;
    uint32_t words[W_COUNT];
};

struct memviz_ctx {
    struct model *model;
    uint64_t wall_base_ns;
    struct device_trace *dev; /* MAX_DEVICES of them */
    uint32_t ndev;            /* 1 + highest device with entries */
    uint32_t next_memo;
    bool category_seen, unknown_seen;
    bool failed;
    uint64_t end_ns;
};

/* Writes word `k` through the memo of device d: the first time as text, then by reference. */
static void word(struct memviz_ctx *c, struct device_trace *d, struct pickle_writer *w, int k)
{
    if (d->words[k]) {
        pickle_get(w, d->words[k] - 1);
        return;
    }
    pickle_cstr(w, word_text(k));
    pickle_put(w, c->next_memo);
    d->words[k] = ++c->next_memo;
}

static void key_uint(struct memviz_ctx *c, struct device_trace *d, struct pickle_writer *w, int k,
                     uint64_t v)
{
    word(c, d, w, k);
    pickle_uint(w, v);
}

static void key_word(struct memviz_ctx *c, struct device_trace *d, struct pickle_writer *w, int k,
                     int v)
{
    word(c, d, w, k);
    word(c, d, w, v);
}

static const char *frame_module(const struct reader *r, const struct reader_frame *f)
{
    const struct reader_module *mod = reader_module(r, f->module_id);
    return mod && mod->path ? mod->path : "??";
}

/* The model names a frame "symbol+0xoff (module)"; the viewer prints filename:line:name, and
 * the filename is the module already. */
static void frame_name(struct pickle_writer *w, const char *name, const char *module)
{
    const char *base = strrchr(module, '/');
    base = base ? base + 1 : module;
    size_t n = strlen(name), b = strlen(base);
    if (n > b + 3 && name[n - 1] == ')' && strncmp(name + n - b - 3, " (", 2) == 0 &&
        strncmp(name + n - b - 1, base, b) == 0)
        n -= b + 3;
    pickle_str(w, name, n);
}

static void write_frames_list(struct memviz_ctx *c, struct device_trace *d, struct pickle_writer *w,
                              uint32_t site)
{
    const struct reader *r = model_reader(c->model);
    pickle_list_begin(w);
    uint32_t id = site;
    for (int depth = 0; id && depth < MAX_FRAMES; depth++) {
        const struct reader_frame *f = reader_frame(r, id);
        if (!f)
            break;
        pickle_dict_begin(w);
        word(c, d, w, W_FILENAME);
        pickle_cstr(w, frame_module(r, f));
        /* a Python frame is what the viewer was made for: its file, line and function */
        const struct reader_module *mod = reader_module(r, f->module_id);
        int python = mod && (mod->flags & MST_MODULE_F_PYTHON);
        key_uint(c, d, w, W_LINE, python ? f->module_offset : 0);
        word(c, d, w, W_NAME);
        if (python)
            pickle_cstr(w, reader_string(r, f->symbol_id));
        else
            frame_name(w, model_frame_name(c->model, id), frame_module(r, f));
        pickle_dict_end(w);
        id = f->parent;
    }
    pickle_list_end(w);
}

/* A site's frames list is written once per device and referenced through the memo after. */
static void frames(struct memviz_ctx *c, struct device_trace *d, struct pickle_writer *w,
                   uint32_t site)
{
    word(c, d, w, W_FRAMES);
    if (site < d->memo_len && d->memo[site]) {
        pickle_get(w, d->memo[site] - 1);
        return;
    }
    write_frames_list(c, d, w, site);
    if (site >= d->memo_len) {
        size_t len = site + 1 > 2 * d->memo_len ? site + 1 : 2 * d->memo_len;
        uint32_t *memo = realloc(d->memo, len * sizeof *memo);
        if (!memo)
            return; /* written again next time: larger, still correct */
        memset(memo + d->memo_len, 0, (len - d->memo_len) * sizeof *memo);
        d->memo = memo;
        d->memo_len = len;
    }
    pickle_put(w, c->next_memo);
    d->memo[site] = ++c->next_memo;
}

static struct device_trace *device(struct memviz_ctx *c, uint8_t ordinal)
{
    struct device_trace *d = &c->dev[ordinal];
    if (!d->tmp) {
        d->tmp = tmpfile();
        if (!d->tmp) {
            c->failed = true;
            return NULL;
        }
        pickle_fragment_begin(&d->w, d->tmp);
    }
    if (ordinal + 1u > c->ndev)
        c->ndev = ordinal + 1u;
    return d;
}

struct entry {
    int action; /* enum word */
    uint8_t device;
    bool has_addr;
    uint64_t addr, size, stream, time_ns;
    uint32_t site;
    int category;         /* -1: none */
    int memshim;          /* residency event for 'memshim_event', or 0 */
    uint64_t device_free; /* 'oom' only */
};

static void write_entry(struct memviz_ctx *c, const struct entry *e)
{
    struct device_trace *d = device(c, e->device);
    if (!d)
        return;
    struct pickle_writer *w = &d->w;
    pickle_dict_begin(w);
    key_word(c, d, w, W_ACTION, e->action);
    if (e->has_addr)
        key_uint(c, d, w, W_ADDR, e->addr);
    key_uint(c, d, w, W_SIZE, e->size);
    if (!e->has_addr)
        key_uint(c, d, w, W_DEVICE_FREE, e->device_free);
    key_uint(c, d, w, W_STREAM, e->stream);
    key_uint(c, d, w, W_TIME_US, (c->wall_base_ns + e->time_ns) / 1000);
    frames(c, d, w, e->site);
    if (e->category >= 0) {
        key_word(c, d, w, W_CATEGORY, W_CATEGORIES + e->category);
        c->category_seen = true;
        c->unknown_seen |= e->category == MST_CAT_UNKNOWN;
    }
    if (e->memshim)
        key_word(c, d, w, W_MEMSHIM_EVENT, W_RESIDENCY + e->memshim);
    pickle_dict_end(w);
}

static void alloc_entries(struct memviz_ctx *c, const struct model_alloc *a, uint64_t time_ns,
                          int why)
{
    struct entry e = {.device = a->device,
                      .has_addr = true,
                      .addr = a->addr,
                      .size = a->size,
                      .stream = a->stream,
                      .time_ns = time_ns,
                      .site = a->site,
                      .category = a->category < MST_CATEGORY_MAX ? a->category : 0,
                      .memshim = why};
    e.action = W_SEGMENT_ALLOC;
    write_entry(c, &e);
    e.action = W_ALLOC;
    write_entry(c, &e);
}

static void free_entries(struct memviz_ctx *c, const struct model_alloc *a, uint64_t time_ns,
                         uint32_t site, int why)
{
    struct entry e = {.device = a->device,
                      .has_addr = true,
                      .addr = a->addr,
                      .size = a->size,
                      .stream = a->stream,
                      .time_ns = time_ns,
                      .site = site,
                      .category = a->category < MST_CATEGORY_MAX ? a->category : 0,
                      .memshim = why};
    static const int actions[] = {W_FREE_REQUESTED, W_FREE_COMPLETED, W_SEGMENT_FREE};
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        e.action = actions[i];
        write_entry(c, &e);
    }
}

static void oom_entry(struct memviz_ctx *c, const struct mst_rec_oom *o)
{
    struct entry e = {.action = W_OOM,
                      .device = o->device,
                      .size = o->request,
                      .time_ns = o->time_ns,
                      .site = o->site,
                      .category = -1,
                      .device_free = o->ceiling > o->resident ? o->ceiling - o->resident : 0};
    write_entry(c, &e);
}

static void residency_entries(struct memviz_ctx *c, const struct mst_rec_residency *r,
                              const struct model_alloc *a)
{
    int why = r->event <= MST_RES_LAST ? r->event : 0;
    bool gone = r->event == MST_RES_SPILL || r->event == MST_RES_DROP;
    if (gone && a->residency != MODEL_RESIDENT)
        free_entries(c, a, r->time_ns, a->site, why);
    else if (!gone && a->residency == MODEL_RESIDENT)
        alloc_entries(c, a, r->time_ns, why);
}

/* An 'annotate' entry (PyTorch's own action for user notes: torch.cuda._memory_viz.trace prints
 * it as "# annotate NAME: TEXT"), so that what the shim did is named in the trace and not only
 * implied by a free and an allocation. */
static void annotate(struct memviz_ctx *c, uint8_t ordinal, uint64_t addr, uint64_t size,
                     uint64_t time_ns, const char *text)
{
    struct device_trace *d = device(c, ordinal);
    if (!d)
        return;
    struct pickle_writer *w = &d->w;
    pickle_dict_begin(w);
    key_word(c, d, w, W_ACTION, W_ANNOTATE);
    key_uint(c, d, w, W_ADDR, addr);
    key_uint(c, d, w, W_SIZE, size);
    key_uint(c, d, w, W_STREAM, 0);
    key_uint(c, d, w, W_TIME_US, (c->wall_base_ns + time_ns) / 1000);
    frames(c, d, w, 0); /* the viewer reads every entry's frames */
    word(c, d, w, W_USER_METADATA);
    pickle_cstr(w, text);
    pickle_dict_end(w);
}

static void residency_note(struct memviz_ctx *c, const struct mst_rec_residency *r,
                           const struct model_alloc *a)
{
    static const char *const what[] = {
        [MST_RES_SPILL] = "spilled to host memory",
        [MST_RES_RESTORE] = "restored from host memory",
        [MST_RES_PREFETCH] = "prefetched from host memory",
        [MST_RES_DROP] = "dropped, to be recomputed when next used",
        [MST_RES_RECOMPUTE] = "recomputed",
        [MST_RES_HOST_USE] = "used by an operation in host memory (no room on the device)",
    };
    char text[128], b[32];
    const char *w = r->event <= MST_RES_LAST && what[r->event] ? what[r->event] : "moved";
    snprintf(text, sizeof text, "memshim %s: %s %s", reader_residency_name(r->event), w,
             table_bytes(a->size, b, sizeof b));
    annotate(c, a->device, a->addr, a->size, r->time_ns, text);
}

/* The ceiling in force, as a note at address 0 whose size is the ceiling. */
static void ceiling_note(struct memviz_ctx *c, const struct mst_rec_ceiling *ce)
{
    char text[128], b[32];
    if (ce->ceiling_bytes)
        snprintf(text, sizeof text, "memshim ceiling %s (%s)",
                 table_bytes(ce->ceiling_bytes, b, sizeof b), reader_policy_name(ce->policy));
    else
        snprintf(text, sizeof text, "memshim ceiling none");
    annotate(c, ce->device, 0, ce->ceiling_bytes, ce->time_ns, text);
}

static bool charged(const struct model_alloc *a)
{
    return a && !(a->flags & MST_ALLOC_F_HOST);
}

static int on_event(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    struct memviz_ctx *c = ctx;
    const struct reader_record *rec = ev->rec;
    /* frame names are resolved (and cached) by the model on first use */
    c->model = (struct model *)m;
    c->end_ns = st->time_ns;
    switch (rec->kind) {
    case MST_REC_ALLOC:
        if (charged(ev->alloc))
            alloc_entries(c, ev->alloc, rec->u.alloc.time_ns, 0);
        break;
    case MST_REC_FREE:
        /* memory spilled or dropped before its free already left the device */
        if (charged(ev->alloc) && ev->alloc->residency == MODEL_RESIDENT)
            free_entries(c, ev->alloc, rec->u.free.time_ns, rec->u.free.site, 0);
        break;
    case MST_REC_RESIDENCY:
        if (charged(ev->alloc)) {
            residency_entries(c, &rec->u.residency, ev->alloc);
            residency_note(c, &rec->u.residency, ev->alloc);
        }
        break;
    case MST_REC_CEILING:
        ceiling_note(c, &rec->u.ceiling);
        break;
    case MST_REC_OOM:
        oom_entry(c, &rec->u.oom);
        break;
    default:
        break;
    }
    return c->failed;
}

/* MemoryViz.js misspells the array it would add 'unknown' to, and throws: give it one. */
static void unknown_category_entry(struct memviz_ctx *c)
{
    if (!c->category_seen || c->unknown_seen)
        return;
    uint32_t last = c->ndev;
    while (last > 0 && !c->dev[last - 1].tmp)
        last--;
    if (last == 0)
        return;
    struct device_trace *d = &c->dev[last - 1];
    struct pickle_writer *w = &d->w;
    pickle_dict_begin(w);
    pickle_key_cstr(w, "action", "snapshot");
    pickle_key_uint(w, "stream", 0);
    pickle_key_uint(w, "time_us", (c->wall_base_ns + c->end_ns) / 1000);
    pickle_cstr(w, "frames");
    pickle_list_begin(w);
    pickle_list_end(w);
    pickle_key_cstr(w, "category", "unknown");
    pickle_dict_end(w);
}

struct segments_ctx {
    struct memviz_ctx *c;
    struct pickle_writer *w;
};

static void block(struct segments_ctx *s, const struct model_alloc *a)
{
    struct pickle_writer *w = s->w;
    pickle_list_begin(w);
    pickle_dict_begin(w);
    pickle_key_uint(w, "address", a->addr);
    pickle_key_uint(w, "size", a->size);
    pickle_key_uint(w, "requested_size", a->requested);
    pickle_key_cstr(w, "state", "active_allocated");
    pickle_key_cstr(w, "category", reader_category_name(a->category));
    frames(s->c, &s->c->dev[a->device], w, a->site);
    pickle_dict_end(w);
    pickle_list_end(w);
}

static int segment(void *ctx, const struct model_alloc *a)
{
    struct segments_ctx *s = ctx;
    struct pickle_writer *w = s->w;
    if (!charged(a) || a->residency != MODEL_RESIDENT)
        return 0;
    pickle_dict_begin(w);
    pickle_key_uint(w, "device", a->device);
    pickle_key_uint(w, "address", a->addr);
    pickle_key_uint(w, "total_size", a->size);
    pickle_key_uint(w, "allocated_size", a->size);
    pickle_key_uint(w, "active_size", a->size);
    pickle_key_uint(w, "requested_size", a->requested);
    pickle_key_uint(w, "stream", a->stream);
    pickle_key_cstr(w, "segment_type", a->size > SMALL_SEGMENT ? "large" : "small");
    pickle_cstr(w, "is_expandable");
    pickle_bool(w, false);
    frames(s->c, &s->c->dev[a->device], w, a->site);
    pickle_cstr(w, "blocks");
    block(s, a);
    pickle_dict_end(w);
    return 0;
}

/* The main document: the device fragments copied in order, then the final segments. */
static int write_snapshot(struct memviz_ctx *c, FILE *out)
{
    struct pickle_writer w;
    pickle_begin(&w, out);
    pickle_dict_begin(&w);
    pickle_cstr(&w, "device_traces");
    pickle_list_begin(&w);
    for (uint32_t i = 0; i < c->ndev; i++) {
        pickle_list_begin(&w);
        if (c->dev[i].tmp)
            pickle_copy(&w, c->dev[i].tmp);
        pickle_list_end(&w);
    }
    pickle_list_end(&w);
    pickle_cstr(&w, "segments");
    pickle_list_begin(&w);
    struct segments_ctx s = {.c = c, .w = &w};
    model_each_live(c->model, segment, &s);
    pickle_list_end(&w);
    pickle_dict_end(&w);
    return pickle_end(&w);
}

static int finish_fragments(struct memviz_ctx *c)
{
    int rc = c->failed ? -1 : 0;
    for (uint32_t i = 0; i < c->ndev; i++)
        if (c->dev[i].tmp && pickle_fragment_end(&c->dev[i].w) != 0)
            rc = -1;
    return rc;
}

static void free_ctx(struct memviz_ctx *c)
{
    for (uint32_t i = 0; c->dev && i < MAX_DEVICES; i++) {
        if (c->dev[i].tmp)
            fclose(c->dev[i].tmp);
        free(c->dev[i].memo);
    }
    free(c->dev);
}

int export_memviz(const char *trace, FILE *out, char *err, size_t errlen)
{
    struct memviz_ctx c = {0};
    c.dev = calloc(MAX_DEVICES, sizeof *c.dev);
    if (!c.dev) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct reader *r = reader_open(trace, err, errlen);
    if (!r) {
        free_ctx(&c);
        return -1;
    }
    c.wall_base_ns = reader_header(r)->wall_base_ns;
    reader_close(r);

    struct model_callbacks cb = {.ctx = &c, .on_event = on_event};
    struct model_options opt = {0};
    struct model *m = model_replay(trace, &opt, &cb, err, errlen);
    int rc = -1;
    if (m) {
        if (model_reader_status(m) != READER_OK)
            fprintf(stderr, "memshim-analyze: warning: %s\n", model_reader_error(m));
        c.model = m;
        unknown_category_entry(&c);
        /* every device the trace names gets its list, as the viewer indexes them by ordinal */
        uint32_t named = reader_device_count(model_reader(m));
        if (named > c.ndev && named <= MAX_DEVICES)
            c.ndev = named;
        if (c.ndev == 0)
            c.ndev = 1;
        rc = finish_fragments(&c);
        if (rc == 0)
            rc = write_snapshot(&c, out);
        if (rc != 0)
            snprintf(err, errlen, "writing the snapshot failed");
        model_free(m);
    }
    free_ctx(&c);
    return rc;
}
