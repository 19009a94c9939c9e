/* elfsym: see elfsym.h. 64-bit little-endian ELF only (the platforms CUDA runs on). */
#include "elfsym.h"

#include <elf.h>
#include <string.h>

struct elfsym_file {
    const unsigned char *data;
    size_t size;
};

static int elfsym_in(const struct elfsym_file *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

/* The section headers, or NULL when the image is not a 64-bit ELF file whose headers lie
 * inside it, aligned (the image is mapped at a page boundary). */
static const Elf64_Shdr *elfsym_sections(const struct elfsym_file *f, unsigned *count)
{
    const Elf64_Ehdr *eh = (const void *)f->data;
    if (f->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff % _Alignof(Elf64_Shdr) != 0 ||
        !elfsym_in(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return NULL;
    *count = eh->e_shnum;
    return (const void *)(f->data + eh->e_shoff);
}

/* Section i as a symbol table with its strings, checked to lie inside the image. */
static int elfsym_section_table(const struct elfsym_file *f, const Elf64_Shdr *sh, unsigned count,
                                unsigned i, struct elfsym_table *t)
{
    const Elf64_Shdr *s = &sh[i];
    if (s->sh_link >= count || s->sh_entsize != sizeof(Elf64_Sym) ||
        s->sh_offset % _Alignof(Elf64_Sym) != 0 || !elfsym_in(f, s->sh_offset, s->sh_size) ||
        !elfsym_in(f, sh[s->sh_link].sh_offset, sh[s->sh_link].sh_size))
        return -1;
    *t = (struct elfsym_table){.syms = (const void *)(f->data + s->sh_offset),
                               .count = s->sh_size / sizeof(Elf64_Sym),
                               .strs = (const char *)(f->data + sh[s->sh_link].sh_offset),
                               .strsize = sh[s->sh_link].sh_size};
    return 0;
}

int elfsym_table_of(const void *data, size_t size, enum elfsym_which which, struct elfsym_table *t)
{
    struct elfsym_file f = {data, size};
    unsigned count;
    const Elf64_Shdr *sh = elfsym_sections(&f, &count);
    int found = -1;
    for (unsigned i = 0; sh && i < count; i++) {
        if (sh[i].sh_type == SHT_SYMTAB && which == ELFSYM_FULL)
            found = elfsym_section_table(&f, sh, count, i, t) == 0 ? 1 : found;
        else if (sh[i].sh_type == SHT_DYNSYM && found < 0)
            found = elfsym_section_table(&f, sh, count, i, t) == 0 ? 0 : found;
        if (found == 1)
            break;
    }
    return found >= 0 ? 0 : -1;
}
