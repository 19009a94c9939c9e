/* Offline symbolization. See symbolize.h. */
#include "symbolize.h"

#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MODULES 4096 /* a process maps fewer; stop reading files beyond this */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's demangler, looked up once; the analyzer itself links no C++. */
static cxa_demangle_fn cxa_demangle(void)
{
    static int tried;
    static cxa_demangle_fn fn;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            fn = (cxa_demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");
    }
    return fn;
}

/* Rust legacy names end in "::h" and 16 hex digits. */
static void strip_rust_hash(char *s)
{
    size_t n = strlen(s);
    if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
        return;
    for (size_t i = n - 16; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return;
    s[n - 19] = '\0';
}

/* Rust legacy escapes ($LT$, $u20$, "..") left in what the C++ demangler returns. */
static void unescape_rust(char *s)
{
    static const struct {
        const char *from, *to;
    } map[] = {{"$LT$", "<"},  {"$GT$", ">"},  {"$RF$", "&"},  {"$BP$", "*"},  {"$C$", ","},
               {"$u20$", " "}, {"$u27$", "'"}, {"$u5b$", "["}, {"$u5d$", "]"}, {"$u7b$", "{"},
               {"$u7d$", "}"}, {"$u7e$", "~"}, {"$u3b$", ";"}, {"$SP$", "@"},  {"..", "::"}};
    char *w = s;
    for (const char *r = s; *r;) {
        /* a path component that starts with an escape is written "_$..." */
        if (r[0] == '_' && r[1] == '$' && (w == s || (w - s >= 2 && w[-1] == ':' && w[-2] == ':')))
            r++;
        size_t i = 0;
        for (; i < sizeof map / sizeof map[0]; i++) {
            size_t k = strlen(map[i].from);
            if (strncmp(r, map[i].from, k) == 0) {
                size_t t = strlen(map[i].to); /* never longer than the escape */
                memmove(w, map[i].to, t);
                w += t;
                r += k;
                break;
            }
        }
        if (i == sizeof map / sizeof map[0])
            *w++ = *r++;
    }
    *w = '\0';
}

static int is_rust_legacy(const char *name)
{
    size_t n = strlen(name);
    return n > 20 && strncmp(name, "_ZN", 3) == 0 && name[n - 1] == 'E' &&
           memcmp(name + n - 20, "17h", 3) == 0;
}

const char *symbolize_demangle(const char *name, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    cxa_demangle_fn fn = strncmp(name, "_Z", 2) == 0 ? cxa_demangle() : NULL;
    int status = -1;
    char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
    snprintf(buf, len, "%s", status == 0 && out ? out : name);
    free(out);
    if (status == 0 && is_rust_legacy(name)) {
        strip_rust_hash(buf);
        unescape_rust(buf);
    }
    return buf;
}

const char *symbolize_python_frame(const char *file, uint64_t line, const char *function, char *buf,
                                   size_t len)
{
    if (len)
        snprintf(buf, len, "%s:%llu in %s", file && *file ? file : "?", (unsigned long long)line,
                 function && *function ? function : "?");
    return buf;
}

/* ---- ELF symbol tables --------------------------------------------------------------------- */

struct sym {
    uint64_t value, size;
    const char *name; /* into the module's names block */
};

struct module_syms {
    char *path;
    struct sym *syms;
    size_t n;
    char *names;
};

struct symbolizer {
    struct module_syms *mods;
    size_t n;
};

struct symbolizer *symbolizer_new(void)
{
    return calloc(1, sizeof(struct symbolizer));
}

void symbolizer_free(struct symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->mods[i].path);
        free(s->mods[i].syms);
        free(s->mods[i].names);
    }
    free(s->mods);
    free(s);
}

static int by_value(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* Section header i, or NULL if it lies outside the file. */
static const Elf64_Shdr *section(const unsigned char *img, size_t size, const Elf64_Ehdr *eh,
                                 unsigned i)
{
    uint64_t off = eh->e_shoff + (uint64_t)i * sizeof(Elf64_Shdr);
    if (i >= eh->e_shnum || eh->e_shentsize != sizeof(Elf64_Shdr) || off > size ||
        size - off < sizeof(Elf64_Shdr))
        return NULL;
    return (const Elf64_Shdr *)(img + off);
}

static int in_file(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

/* Copies the function symbols of one symbol table section into m. */
static int load_table(struct module_syms *m, const unsigned char *img, size_t size,
                      const Elf64_Ehdr *eh, const Elf64_Shdr *sh)
{
    const Elf64_Shdr *strs = section(img, size, eh, sh->sh_link);
    if (!strs || sh->sh_entsize != sizeof(Elf64_Sym) ||
        !in_file(size, sh->sh_offset, sh->sh_size) ||
        !in_file(size, strs->sh_offset, strs->sh_size) || strs->sh_size == 0)
        return -1;
    size_t count = sh->sh_size / sizeof(Elf64_Sym);
    const char *strtab = (const char *)img + strs->sh_offset;
    m->names = malloc(strs->sh_size + 1);
    m->syms = malloc((count ? count : 1) * sizeof *m->syms);
    if (!m->names || !m->syms)
        return -1;
    memcpy(m->names, strtab, strs->sh_size);
    m->names[strs->sh_size] = '\0';
    for (size_t i = 0; i < count; i++) {
        Elf64_Sym sym;
        memcpy(&sym, img + sh->sh_offset + i * sizeof sym, sizeof sym);
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
            sym.st_name >= strs->sh_size)
            continue;
        m->syms[m->n++] = (struct sym){sym.st_value, sym.st_size, m->names + sym.st_name};
    }
    qsort(m->syms, m->n, sizeof *m->syms, by_value);
    return 0;
}

static void load_image(struct module_syms *m, const unsigned char *img, size_t size)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0 ||
        img[EI_CLASS] != ELFCLASS64 || img[EI_DATA] != ELFDATA2LSB)
        return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Shdr *dyn = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(img, size, eh, i);
        if (!sh)
            return;
        if (sh->sh_type == SHT_SYMTAB) {
            load_table(m, img, size, eh, sh);
            return;
        }
        if (sh->sh_type == SHT_DYNSYM)
            dyn = sh;
    }
    if (dyn)
        load_table(m, img, size, eh, dyn);
}

static void load_module(struct module_syms *m)
{
    int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* never wait on a FIFO */
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (img != MAP_FAILED) {
            load_image(m, img, (size_t)st.st_size);
            munmap(img, (size_t)st.st_size);
        }
    }
    close(fd);
}

static struct module_syms *module(struct symbolizer *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->mods[i].path, path) == 0)
            return &s->mods[i];
    if (s->n >= MAX_MODULES)
        return NULL;
    struct module_syms *mods = realloc(s->mods, (s->n + 1) * sizeof *mods);
    if (!mods)
        return NULL;
    s->mods = mods;
    struct module_syms *m = &mods[s->n];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    if (!m->path)
        return NULL;
    s->n++;
    load_module(m);
    return m;
}

const char *symbolizer_lookup(struct symbolizer *s, const char *path, uint64_t offset,
                              uint64_t *within)
{
    struct module_syms *m = path && *path ? module(s, path) : NULL;
    if (!m || m->n == 0)
        return NULL;
    size_t lo = 0, hi = m->n; /* first symbol with value > offset */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].value <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct sym *f = &m->syms[lo - 1];
    if (f->size && offset >= f->value + f->size)
        return NULL;
    *within = offset - f->value;
    return f->name;
}
