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

/* Search one symbol table section; 0 and the name when a function contains vaddr. */
static int elfsym_search(const struct elfsym_file *f, const Elf64_Shdr *sh,
                         const Elf64_Shdr *strsec, uint64_t vaddr, char *name, size_t size,
                         uint64_t *offset)
{
    if (sh->sh_entsize != sizeof(Elf64_Sym) || !elfsym_in(f, sh->sh_offset, sh->sh_size) ||
        !elfsym_in(f, strsec->sh_offset, strsec->sh_size))
        return -1;
    const Elf64_Sym *syms = (const void *)(f->data + sh->sh_offset);
    const char *strs = (const char *)(f->data + strsec->sh_offset);
    for (size_t i = 0; i < sh->sh_size / sizeof *syms; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value > vaddr ||
            vaddr >= s->st_value + (s->st_size ? s->st_size : 1) || s->st_name >= strsec->sh_size)
            continue;
        const char *n = strs + s->st_name;
        snprintf(name, size, "%.*s", (int)strnlen(n, strsec->sh_size - s->st_name), n);
        *offset = vaddr - s->st_value;
        return 0;
    }
    return -1;
}

static int elfsym_scan(const struct elfsym_file *f, uint64_t vaddr, char *name, size_t size,
                       uint64_t *offset)
{
    const Elf64_Ehdr *eh = (const void *)f->data;
    if (f->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !elfsym_in(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    const Elf64_Shdr *sh = (const void *)(f->data + eh->e_shoff);
    /* The full table first; the dynamic one names what dladdr would have found anyway. */
    static const uint32_t kinds[] = {SHT_SYMTAB, SHT_DYNSYM};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type == kinds[k] && sh[i].sh_link < eh->e_shnum &&
                elfsym_search(f, &sh[i], &sh[sh[i].sh_link], vaddr, name, size, offset) == 0)
                return 0;
        }
    }
    return -1;
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
            struct elfsym_file f = {p, (size_t)st.st_size};
            r = elfsym_scan(&f, vaddr, name, size, offset);
            munmap(p, (size_t)st.st_size);
        }
    }
    close(fd);
    return r;
}
