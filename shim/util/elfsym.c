/* elfsym: see elfsym.h. 64-bit little-endian ELF only (the platforms CUDA runs on). */
#include "elfsym.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elfsym_file {
    const unsigned char *data;
    size_t size;
};

static int elfsym_in(const struct elfsym_file *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

/* Search one symbol table section: the NUL-terminated name (inside the file's bytes) of the
 * function that contains vaddr, or NULL. */
static const char *elfsym_search(const struct elfsym_file *f, const Elf64_Shdr *sh,
                                 const Elf64_Shdr *strsec, uint64_t vaddr, uint64_t *offset)
{
    if (sh->sh_entsize != sizeof(Elf64_Sym) || !elfsym_in(f, sh->sh_offset, sh->sh_size) ||
        !elfsym_in(f, strsec->sh_offset, strsec->sh_size))
        return NULL;
    const Elf64_Sym *syms = (const void *)(f->data + sh->sh_offset);
    const char *strs = (const char *)(f->data + strsec->sh_offset);
    for (size_t i = 0; i < sh->sh_size / sizeof *syms; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value > vaddr ||
            vaddr >= s->st_value + (s->st_size ? s->st_size : 1) || s->st_name >= strsec->sh_size)
            continue;
        const char *n = strs + s->st_name;
        if (!memchr(n, '\0', strsec->sh_size - s->st_name))
            continue; /* a name that runs off its table */
        *offset = vaddr - s->st_value;
        return n;
    }
    return NULL;
}

static const char *elfsym_scan(const struct elfsym_file *f, uint64_t vaddr, uint64_t *offset)
{
    const Elf64_Ehdr *eh = (const void *)f->data;
    if (f->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !elfsym_in(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return NULL;
    const Elf64_Shdr *sh = (const void *)(f->data + eh->e_shoff);
    /* The full table first; the dynamic one names what dladdr would have found anyway. */
    static const uint32_t kinds[] = {SHT_SYMTAB, SHT_DYNSYM};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            const char *n;
            if (sh[i].sh_type == kinds[k] && sh[i].sh_link < eh->e_shnum &&
                (n = elfsym_search(f, &sh[i], &sh[sh[i].sh_link], vaddr, offset)))
                return n;
        }
    }
    return NULL;
}

int elfsym_table_of(const void *data, size_t size, enum elfsym_which which, struct elfsym_table *t)
{
    struct elfsym_file f = {data, size};
    const Elf64_Ehdr *eh = data;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !elfsym_in(&f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    const Elf64_Shdr *sh = (const void *)(f.data + eh->e_shoff), *found = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym) ||
            !elfsym_in(&f, sh[i].sh_offset, sh[i].sh_size) ||
            !elfsym_in(&f, sh[sh[i].sh_link].sh_offset, sh[sh[i].sh_link].sh_size))
            continue;
        if (sh[i].sh_type == SHT_DYNSYM && !found)
            found = &sh[i];
        else if (sh[i].sh_type == SHT_SYMTAB && which == ELFSYM_FULL)
            found = &sh[i];
    }
    if (!found)
        return -1;
    const Elf64_Shdr *strsec = &sh[found->sh_link];
    *t = (struct elfsym_table){.syms = (const void *)(f.data + found->sh_offset),
                               .count = found->sh_size / sizeof(Elf64_Sym),
                               .strs = (const char *)(f.data + strsec->sh_offset),
                               .strsize = strsec->sh_size};
    return 0;
}

const char *elfsym_in_image(const void *data, size_t size, uint64_t vaddr, uint64_t *offset)
{
    struct elfsym_file f = {data, size};
    return elfsym_scan(&f, vaddr, offset);
}

int elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t size, uint64_t *offset)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int r = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            const char *n = elfsym_in_image(p, (size_t)st.st_size, vaddr, offset);
            if (n) {
                snprintf(name, size, "%s", n);
                r = 0;
            }
            munmap(p, (size_t)st.st_size);
        }
    }
    close(fd);
    return r;
}
