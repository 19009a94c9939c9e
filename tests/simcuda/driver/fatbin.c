/* fatbin: kernel parameter layouts from nvcc's fat binaries; see fatbin.h.
 *
 * The layouts (as publicly documented by tools that read cubins, no NVIDIA header has them):
 * - __cudaRegisterFatBinary's argument: {u32 magic 0x466243b1, u32 version, data, ...}, data
 *   pointing at a container: {u32 magic 0xba55ed50, u16 version, u16 header size, u64 size of
 *   the entries that follow}.
 * - Each entry: a header (u16 kind: 1 PTX, 2 cubin; u32 header size at 4; u64 payload size at
 *   8; u32 stored size at 16; u64 flags at 40; u64 size once decompressed at 56), then the
 *   payload: an ELF image, or a zstd frame of one.
 * - In the cubin, `.nv.info.<kernel>` is a run of attributes {u8 format, u8 attribute, u16}:
 *   format 4 carries that many bytes after it, the others nothing. EIATTR_KPARAM_INFO (0x17)
 *   carries 12: u32 index, u16 ordinal, u16 offset, u32 whose top 14 bits are the size. */
#include "fatbin.h"

#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef SIMCUDA_HAVE_ZSTD
#include <zstd.h>
#endif

#define FATBIN_WRAPPER_MAGIC   0x466243b1u
#define FATBIN_CONTAINER_MAGIC 0xba55ed50u
#define FATBIN_KIND_CUBIN      2
#define FATBIN_ENTRY_MIN       64u
#define FATBIN_MAX_IMAGE       (256u << 20)
#define EIFMT_SVAL             4
#define EIATTR_KPARAM_INFO     0x17
#define KPARAM_MAX             1024

static uint16_t rd16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The last cubin decompressed: the kernels of one translation unit come one after another. Known
 * by its address, size and first bytes: a library unloaded and another loaded at its address
 * must not be answered from the first one's image. */
#define FB_HEAD 64
static struct {
    pthread_mutex_t lock;
    const unsigned char *src;
    uint64_t stored;
    unsigned char head[FB_HEAD];
    unsigned char *image;
    size_t size;
} fb_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The ELF image of a cubin entry (payload p of `stored` bytes): p itself, or its decompression
 * (held in fb_cache, whose lock the caller holds). NULL when it cannot be read. */
static const unsigned char *fb_image(const unsigned char *p, uint64_t stored, uint64_t plain,
                                     size_t *size)
{
    if (stored >= 4 && memcmp(p, ELFMAG, SELFMAG) == 0) {
        *size = stored;
        return p;
    }
#ifdef SIMCUDA_HAVE_ZSTD
    size_t head = stored < FB_HEAD ? (size_t)stored : FB_HEAD;
    if (fb_cache.src == p && fb_cache.stored == stored && memcmp(fb_cache.head, p, head) == 0) {
        *size = fb_cache.size;
        return fb_cache.image;
    }
    if (stored < 4 || rd32(p) != ZSTD_MAGICNUMBER || plain == 0 || plain > FATBIN_MAX_IMAGE)
        return NULL;
    unsigned char *out = malloc(plain);
    if (!out)
        return NULL;
    size_t got = ZSTD_decompress(out, plain, p, stored);
    if (ZSTD_isError(got)) {
        free(out);
        return NULL;
    }
    free(fb_cache.image);
    fb_cache.src = p;
    fb_cache.stored = stored;
    memcpy(fb_cache.head, p, head);
    fb_cache.image = out;
    fb_cache.size = *size = got;
    return out;
#else
    (void)plain;
    return NULL;
#endif
}

/* The section named `want` in an ELF64 image, bounds-checked. */
static const unsigned char *fb_section(const unsigned char *img, size_t size, const char *want,
                                       size_t *len)
{
    Elf64_Ehdr eh;
    if (size < sizeof eh)
        return NULL;
    memcpy(&eh, img, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shoff > size || (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum ||
        eh.e_shstrndx >= eh.e_shnum)
        return NULL;
    Elf64_Shdr names, sh;
    memcpy(&names, img + eh.e_shoff + eh.e_shstrndx * sizeof sh, sizeof names);
    if (names.sh_offset > size || names.sh_size > size - names.sh_offset)
        return NULL;
    size_t wl = strlen(want);
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        memcpy(&sh, img + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_name >= names.sh_size || names.sh_size - sh.sh_name <= wl ||
            memcmp(img + names.sh_offset + sh.sh_name, want, wl + 1) != 0)
            continue;
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
            return NULL;
        *len = sh.sh_size;
        return img + sh.sh_offset;
    }
    return NULL;
}

/* The KPARAM_INFO attributes of an .nv.info section, into out (sized by the highest ordinal). */
static int fb_kparams(const unsigned char *p, size_t len, struct fatbin_params *out)
{
    size_t off[KPARAM_MAX], sz[KPARAM_MAX];
    int n = 0;
    for (size_t i = 0; i + 4 <= len;) {
        size_t vlen = p[i] == EIFMT_SVAL ? rd16(p + i + 2) : 0;
        if (vlen > len - i - 4)
            return -1;
        if (p[i] == EIFMT_SVAL && p[i + 1] == EIATTR_KPARAM_INFO && vlen >= 12) {
            unsigned ord = rd16(p + i + 8);
            if (ord >= KPARAM_MAX)
                return -1;
            for (; n <= (int)ord; n++)
                off[n] = sz[n] = 0;
            off[ord] = rd16(p + i + 10);
            sz[ord] = rd32(p + i + 12) >> 18;
        }
        i += 4 + vlen;
    }
    for (int k = 0; k < n; k++)
        if (sz[k] == 0) /* an ordinal with no attribute: not a layout to trust */
            return -1;
    out->n = n;
    out->total = 0;
    out->offsets = malloc((n ? n : 1) * sizeof *out->offsets);
    out->sizes = malloc((n ? n : 1) * sizeof *out->sizes);
    if (!out->offsets || !out->sizes) {
        free(out->offsets);
        free(out->sizes);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        out->offsets[k] = off[k];
        out->sizes[k] = sz[k];
        if (off[k] + sz[k] > out->total)
            out->total = off[k] + sz[k];
    }
    return 0;
}

/* The layout from the first cubin of the container (`size` bytes) that describes the kernel. */
static int fb_container(const unsigned char *c, size_t size, const char *section,
                        struct fatbin_params *out)
{
    if (size < 16 || rd32(c) != FATBIN_CONTAINER_MAGIC || rd16(c + 6) > size ||
        rd64(c + 8) > size - rd16(c + 6))
        return -1;
    const unsigned char *e = c + rd16(c + 6), *end = e + rd64(c + 8);
    while (end - e >= FATBIN_ENTRY_MIN) {
        uint32_t hsize = rd32(e + 4);
        uint64_t payload = rd64(e + 8), stored = rd32(e + 16);
        if (hsize < FATBIN_ENTRY_MIN || hsize > (uint64_t)(end - e) ||
            payload > (uint64_t)(end - e - hsize))
            return -1;
        if (rd16(e) == FATBIN_KIND_CUBIN) {
            size_t isize, len;
            const unsigned char *img = fb_image(
                e + hsize, stored && stored <= payload ? stored : payload, rd64(e + 56), &isize);
            const unsigned char *info = img ? fb_section(img, isize, section, &len) : NULL;
            if (info)
                return fb_kparams(info, len, out);
        }
        e += hsize + payload;
    }
    return -1;
}

int fatbin_params_in(const void *container, size_t size, const char *name,
                     struct fatbin_params *out)
{
    if (!container || !name)
        return -1;
    size_t nl = strlen(name);
    char *section = malloc(nl + sizeof ".nv.info.");
    if (!section)
        return -1;
    memcpy(section, ".nv.info.", sizeof ".nv.info." - 1);
    memcpy(section + sizeof ".nv.info." - 1, name, nl + 1);
    pthread_mutex_lock(&fb_cache.lock);
    int r = fb_container(container, size, section, out);
    pthread_mutex_unlock(&fb_cache.lock);
    free(section);
    return r;
}

int fatbin_params(const void *wrapper, const char *name, struct fatbin_params *out)
{
    const unsigned char *w = wrapper, *c;
    if (!w || rd32(w) != FATBIN_WRAPPER_MAGIC)
        return -1;
    memcpy(&c, w + 8, sizeof c);
    if (!c || rd32(c) != FATBIN_CONTAINER_MAGIC)
        return -1;
    /* The image is the loaded library's own: its header's sizes are all there is to go by. */
    return fatbin_params_in(c, (size_t)rd16(c + 6) + rd64(c + 8), name, out);
}
