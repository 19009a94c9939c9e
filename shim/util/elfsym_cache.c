/* elfsym_cache: see elfsym_cache.h.
 *
 * A library's tables are large (PyTorch's libtorch_cpu.so: 546,000 symbols in .symtab, 76,000
 * in .dynsym) and a new call site names up to 24 frames, so a search that reads the whole table
 * (as dladdr does with .dynsym) costs milliseconds a frame: the first steps of a PyTorch program
 * spent most of a second there. So each table is indexed once, on its first lookup: the
 * positions of its symbols sorted by address, each with the furthest end of any symbol at or
 * before it, so that a lookup bisects, then steps back only over symbols that could still
 * contain the address. */
#include "elfsym_cache.h"

#include "arena.h"
#include "elfsym.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELFSYM_CACHE_MODULES 256

/* One table's symbols of one kind, sorted by address (equal addresses in table order). */
struct elfsym_index {
    struct elfsym_table tab;
    uint32_t *pos;   /* symbol numbers, by address */
    uint64_t *reach; /* reach[i]: the largest end of the symbols pos[0..i] */
    uint32_t n;
    uint8_t state; /* 0 not built yet, 1 built, 2 none (no table, no memory) */
};

struct elfsym_image {
    const void *data; /* NULL: could not be mapped, not tried again */
    size_t size;
    char path[512];
    struct elfsym_index full, dynamic;
};

static struct elfsym_image elfsym_images[ELFSYM_CACHE_MODULES];
static unsigned elfsym_nimages;
static pthread_mutex_t elfsym_mutex = PTHREAD_MUTEX_INITIALIZER;

static void elfsym_map(struct elfsym_image *im, const char *path)
{
    snprintf(im->path, sizeof im->path, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            im->data = p;
            im->size = (size_t)st.st_size;
        }
    }
    close(fd);
}

static struct elfsym_image *elfsym_image_of(const char *path)
{
    for (unsigned i = 0; i < elfsym_nimages; i++)
        if (strcmp(elfsym_images[i].path, path) == 0)
            return &elfsym_images[i];
    if (elfsym_nimages == ELFSYM_CACHE_MODULES)
        return NULL;
    struct elfsym_image *im = &elfsym_images[elfsym_nimages++];
    elfsym_map(im, path);
    return im;
}

/* ---- the index ---- */

/* Which symbols a kind of lookup can answer with: the functions elfsym_in_image names, or the
 * symbols dladdr considers (defined, of any type but thread-local). */
static int elfsym_wanted(const struct elfsym_table *t, const Elf64_Sym *s, enum elfsym_which w)
{
    if (s->st_name >= t->strsize)
        return 0;
    if (w == ELFSYM_FULL)
        return ELF64_ST_TYPE(s->st_info) == STT_FUNC;
    /* dladdr walks the GNU hash table, which holds no undefined symbol. */
    return s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) != STT_TLS;
}

/* The bytes of s an address can fall in: a symbol of size 0 (or an undefined one) holds its own
 * address alone, for elfsym_in_image and for dladdr alike. */
static uint64_t elfsym_end(const Elf64_Sym *s)
{
    uint64_t len = s->st_size && s->st_shndx != SHN_UNDEF ? s->st_size : 1;
    return s->st_value + len < s->st_value ? UINT64_MAX : s->st_value + len;
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

static int elfsym_index_fill(struct elfsym_index *x, enum elfsym_which w)
{
    const struct elfsym_table *t = &x->tab;
    uint32_t n = 0;
    for (size_t i = 0; i < t->count && i < UINT32_MAX; i++)
        n += (uint32_t)elfsym_wanted(t, &t->syms[i], w);
    if (n == 0)
        return -1;
    size_t keys_bytes = 2 * (size_t)n * sizeof(struct elfsym_key);
    struct elfsym_key *keys = arena_map(keys_bytes);
    x->pos = arena_map((size_t)n * sizeof *x->pos);
    x->reach = arena_map((size_t)n * sizeof *x->reach);
    if (!keys || !x->pos || !x->reach) {
        if (keys)
            arena_unmap(keys, keys_bytes);
        if (x->pos)
            arena_unmap(x->pos, (size_t)n * sizeof *x->pos);
        if (x->reach)
            arena_unmap(x->reach, (size_t)n * sizeof *x->reach);
        return -1;
    }
    uint32_t k = 0;
    for (size_t i = 0; i < t->count && k < n; i++)
        if (elfsym_wanted(t, &t->syms[i], w))
            keys[k++] = (struct elfsym_key){.value = t->syms[i].st_value, .pos = (uint32_t)i};
    const struct elfsym_key *sorted = elfsym_sort(keys, keys + n, n);
    uint64_t reach = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t end = elfsym_end(&t->syms[sorted[i].pos]);
        reach = end > reach ? end : reach;
        x->pos[i] = sorted[i].pos;
        x->reach[i] = reach;
    }
    x->n = n;
    arena_unmap(keys, keys_bytes);
    return 0;
}

/* Built on first use, under elfsym_mutex; NULL when the image has no such table (or there is
 * no memory for its index). For PyTorch's libtorch_cpu.so the full table's index is 4.8 MB
 * (400,000 functions, 12 bytes each), built in about 25 ms. */
static const struct elfsym_index *elfsym_index_of(struct elfsym_image *im, enum elfsym_which w)
{
    struct elfsym_index *x = w == ELFSYM_FULL ? &im->full : &im->dynamic;
    if (x->state == 0)
        x->state = im->data && elfsym_table_of(im->data, im->size, w, &x->tab) == 0 &&
                           elfsym_index_fill(x, w) == 0
                       ? 1
                       : 2;
    return x->state == 1 ? x : NULL;
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

static const char *elfsym_name(const struct elfsym_table *t, const Elf64_Sym *s)
{
    const char *n = t->strs + s->st_name;
    return memchr(n, '\0', t->strsize - s->st_name) ? n : NULL; /* else it runs off its table */
}

/* The symbol holding vaddr: for ELFSYM_FULL the first in table order (as elfsym_in_image's
 * scan finds it), for ELFSYM_DYNAMIC the one starting nearest below (dladdr's choice; among
 * aliases, the first in table order where dladdr takes the first on its hash chain). */
static const Elf64_Sym *elfsym_find(const struct elfsym_index *x, enum elfsym_which w,
                                    uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    uint32_t best_pos = UINT32_MAX;
    for (uint32_t i = elfsym_upper(x, vaddr); i-- > 0 && x->reach[i] > vaddr;) {
        const Elf64_Sym *s = &x->tab.syms[x->pos[i]];
        if (vaddr >= elfsym_end(s) || !elfsym_name(&x->tab, s))
            continue;
        if (w == ELFSYM_DYNAMIC && best && s->st_value < best->st_value)
            break;
        if (x->pos[i] < best_pos) {
            best = s;
            best_pos = x->pos[i];
        }
    }
    return best;
}

/* ---- lookups ---- */

const char *elfsym_cache_name(const char *path, uint64_t vaddr, uint64_t *offset)
{
    if (!path || !*path)
        return NULL;
    pthread_mutex_lock(&elfsym_mutex);
    struct elfsym_image *im = elfsym_image_of(path);
    const struct elfsym_index *x = im ? elfsym_index_of(im, ELFSYM_FULL) : NULL;
    const Elf64_Sym *s = x ? elfsym_find(x, ELFSYM_FULL, vaddr) : NULL;
    const char *n = s ? elfsym_name(&x->tab, s) : NULL;
    if (n && offset)
        *offset = vaddr - s->st_value;
    pthread_mutex_unlock(&elfsym_mutex);
    return n;
}

int elfsym_cache_exported(const char *path, uint64_t vaddr, const char **name, uint64_t *start)
{
    if (!path || !*path)
        return -1;
    pthread_mutex_lock(&elfsym_mutex);
    struct elfsym_image *im = elfsym_image_of(path);
    const struct elfsym_index *x = im ? elfsym_index_of(im, ELFSYM_DYNAMIC) : NULL;
    const Elf64_Sym *s = x ? elfsym_find(x, ELFSYM_DYNAMIC, vaddr) : NULL;
    if (s) {
        *name = elfsym_name(&x->tab, s);
        *start = s->st_value;
    }
    pthread_mutex_unlock(&elfsym_mutex);
    return !x ? -1 : s != NULL;
}

void elfsym_cache_atfork_child(void)
{
    pthread_mutex_init(&elfsym_mutex, NULL);
}
