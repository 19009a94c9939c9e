/* model_query: what the replay model answers once built: its reader, state, peaks, steps,
 * totals, OOMs, live allocations and the per-site list (built on first use). See model.h. */
#include "model_struct.h"

#include <stdlib.h>

const struct reader *model_reader(const struct model *m)
{
    return m->reader;
}

enum reader_state model_reader_status(const struct model *m)
{
    return reader_status(m->reader);
}

const char *model_reader_error(const struct model *m)
{
    return reader_error(m->reader);
}

const struct model_state *model_state(const struct model *m)
{
    return &m->st;
}

void model_each_live(const struct model *m, int (*fn)(void *ctx, const struct model_alloc *a),
                     void *ctx)
{
    for (uint32_t i = 0; i < m->live.nitems; i++)
        if (m->live.items[i].residency != ITEM_FREE && fn(ctx, &m->live.items[i]) != 0)
            return;
}

const struct model_peak *model_peak(const struct model *m)
{
    return &m->peak;
}

const struct model_step *model_steps(const struct model *m, size_t *n)
{
    *n = m->nsteps;
    return m->steps;
}

const struct model_step *model_steady_step(const struct model *m)
{
    for (size_t i = m->nsteps; i-- > 0;)
        if (m->steps[i].complete)
            return &m->steps[i];
    return m->nsteps ? &m->steps[m->nsteps - 1] : NULL;
}

const struct model_totals *model_totals(const struct model *m)
{
    return &m->totals;
}

const struct model_device_peak *model_device_peak(const struct model *m_const, uint8_t device)
{
    struct model *m = (struct model *)m_const; /* the sole device's figures are filled in here */
    if (m->sole_device == device)
        m->device_peak[device] = (struct model_device_peak){
            .used = 1, .bytes = m->peak.bytes, .time_ns = m->peak.time_ns, .step = m->peak.step};
    return &m->device_peak[device];
}

const struct mst_rec_oom *model_ooms(const struct model *m, size_t *n)
{
    *n = m->nooms;
    return m->ooms;
}

static int count_exit(void *ctx, const struct model_alloc *a)
{
    struct model *m = ctx;
    struct model_site *s = &m->site_list[a->site];
    if (a->residency == MODEL_RESIDENT && !(a->flags & MST_ALLOC_F_HOST))
        s->bytes_at_exit += a->size;
    s->count_at_exit++;
    return 0;
}

const struct model_site *model_sites(const struct model *m_const, size_t *n)
{
    struct model *m = (struct model *)m_const; /* the list is built on first use */
    *n = 0;
    if (!m->site_list && m->cap_sites) {
        m->site_list = calloc(m->cap_sites, sizeof *m->site_list);
        if (!m->site_list)
            return NULL;
        model_each_live(m, count_exit, m);
        size_t k = 0;
        for (uint32_t id = 0; id < m->cap_sites; id++) {
            const struct site_info *info = &m->site_info[id];
            if (!info->allocations) /* never allocated */
                continue;
            struct model_site s = m->site_list[id];
            s.site = id;
            s.category = info->category;
            s.inferred = info->inferred;
            s.allocations = info->allocations;
            s.allocated_bytes = info->allocated_bytes;
            s.max_bytes = info->max_bytes;
            s.bytes_at_peak = m->site_at_peak[id].bytes;
            s.count_at_peak = m->site_at_peak[id].count;
            m->site_list[k++] = s; /* k <= id: compaction never overwrites unread entries */
        }
        m->site_list_len = k;
    }
    *n = m->site_list_len;
    return m->site_list;
}
