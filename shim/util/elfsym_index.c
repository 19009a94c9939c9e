/* elfsym_index: see elfsym_index.h. */
#include "elfsym_index.h"

#include <string.h>

/* Which symbols a kind of lookup can answer with: functions, or the symbols dladdr considers
 * (defined, of any type but thread-local). */
static int elfsym_wanted(const struct elfsym_table *t, const Elf64_Sym *s, enum elfsym_which w)
{
    if (s->st_name >= t->strsize)
        return 0;
    if (w == ELFSYM_FULL)
        return ELF64_ST_TYPE(s->st_info) == STT_FUNC;
    /* dladdr walks the GNU hash table, which holds no undefined symbol. */
    return s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) != STT_TLS;
}

/* The last byte s holds (a symbol of size 0 holds its own address alone, as for dladdr),
 * without overflow: a table may claim any size. */
static uint64_t elfsym_last(const Elf64_Sym *s)
{
    uint64_t len = s->st_size ? s->st_size : 1;
    return len - 1 > UINT64_MAX - s->st_value ? UINT64_MAX : s->st_value + (len - 1);
}

struct elfsym_key {
    uint64_t value;
    uint32_t pos, pad;
};

/* Stable LSD radix sort of n keys by value, a byte at a time, skipping the bytes every key
 * shares; tmp holds n keys. Returns the buffer holding the result. No application heap: qsort
 * may allocate. */
static struct elfsym_key *elfsym_sort(struct elfsym_key *a, struct elfsym_key *tmp, uint32_t n)
{
    for (unsigned shift = 0; shift < 64; shift += 8) {
        uint32_t count[256] = {0};
        for (uint32_t i = 0; i < n; i++)
            count[(a[i].value >> shift) & 0xff]++;
        if (count[(a[0].value >> shift) & 0xff] == n)
            continue;
        uint32_t sum = 0;
        for (unsigned b = 0; b < 256; b++) {
            uint32_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++)
            tmp[count[(a[i].value >> shift) & 0xff]++] = a[i];
        struct elfsym_key *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

void elfsym_index_release(struct elfsym_index *x, const struct elfsym_mem *mem)
{
    if (x->pos)
        mem->unmap(x->pos, (size_t)x->n * sizeof *x->pos);
    if (x->reach)
        mem->unmap(x->reach, (size_t)x->n * sizeof *x->reach);
    x->pos = NULL;
    x->reach = NULL;
    x->n = 0;
}

static uint32_t elfsym_count(const struct elfsym_table *t, enum elfsym_which w)
{
    uint32_t n = 0;
    for (size_t i = 0; i < t->count && i < UINT32_MAX; i++)
        n += (uint32_t)elfsym_wanted(t, &t->syms[i], w);
    return n;
}

int elfsym_index_build(struct elfsym_index *x, const void *data, size_t size,
                       enum elfsym_which which, const struct elfsym_mem *mem)
{
    *x = (struct elfsym_index){.which = which};
    if (elfsym_table_of(data, size, which, &x->tab) != 0)
        return -1;
    const struct elfsym_table *t = &x->tab;
    uint32_t n = elfsym_count(t, which);
    if (n == 0)
        return -1;
    size_t keys_bytes = 2 * (size_t)n * sizeof(struct elfsym_key);
    struct elfsym_key *keys = mem->map(keys_bytes);
    x->n = n;
    x->pos = mem->map((size_t)n * sizeof *x->pos);
    x->reach = mem->map((size_t)n * sizeof *x->reach);
    if (!keys || !x->pos || !x->reach) {
        if (keys)
            mem->unmap(keys, keys_bytes);
        elfsym_index_release(x, mem);
        return -1;
    }
    uint32_t k = 0;
    for (size_t i = 0; i < t->count && k < n; i++)
        if (elfsym_wanted(t, &t->syms[i], which))
            keys[k++] = (struct elfsym_key){.value = t->syms[i].st_value, .pos = (uint32_t)i};
    const struct elfsym_key *sorted = elfsym_sort(keys, keys + n, n);
    uint64_t reach = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t last = elfsym_last(&t->syms[sorted[i].pos]);
        reach = last > reach ? last : reach;
        x->pos[i] = sorted[i].pos;
        x->reach[i] = reach;
    }
    mem->unmap(keys, keys_bytes);
    return 0;
}

/* The number of symbols at or below vaddr (those in index order before it are at or below). */
static uint32_t elfsym_upper(const struct elfsym_index *x, uint64_t vaddr)
{
    uint32_t lo = 0, hi = x->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (x->tab.syms[x->pos[mid]].st_value <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const char *elfsym_index_name(const struct elfsym_index *x, const Elf64_Sym *s)
{
    const char *n = x->tab.strs + s->st_name;
    return memchr(n, '\0', x->tab.strsize - s->st_name) ? n : NULL;
}

const Elf64_Sym *elfsym_index_find(const struct elfsym_index *x, uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    uint32_t best_pos = UINT32_MAX;
    for (uint32_t i = elfsym_upper(x, vaddr); i-- > 0 && x->reach[i] >= vaddr;) {
        const Elf64_Sym *s = &x->tab.syms[x->pos[i]];
        if (vaddr > elfsym_last(s) || !elfsym_index_name(x, s))
            continue;
        if (x->which == ELFSYM_DYNAMIC && best && s->st_value < best->st_value)
            break;
        if (x->pos[i] < best_pos) {
            best = s;
            best_pos = x->pos[i];
        }
    }
    return best;
}
