/* elfsym: static functions of a program are named from its full symbol table, which is what
 * the OOM screen shows for frames dladdr cannot name. elfsym_cache's indexed lookups answer
 * as a search of the whole table does (elfsym_reference.h), and as glibc's dladdr does for
 * exported symbols. */
#include <criterion/criterion.h>

#include "elfsym.h"
#include "elfsym_cache.h"
#include "elfsym_reference.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static __attribute__((noinline)) int hidden_helper(int x)
{
    __asm__ volatile("" ::: "memory");
    return x * 3;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    *(uintptr_t *)out = info->dlpi_addr; /* the main program comes first */
    return 1;
}

Test(elfsym, names_a_static_function)
{
    uintptr_t bias = 0;
    dl_iterate_phdr(first_bias, &bias);
    uint64_t off = 99;
    uint64_t vaddr = (uintptr_t)&hidden_helper - bias + 2;
    cr_assert_str_eq(elfsym_cache_name("/proc/self/exe", vaddr, &off), "hidden_helper");
    cr_assert_eq(off, 2);
    cr_assert_eq(hidden_helper(1), 3);
}

Test(elfsym, misses_cleanly)
{
    uint64_t off;
    cr_assert_null(elfsym_cache_name("/proc/self/exe", 1, &off));
    cr_assert_null(elfsym_cache_name("/nonexistent", 0x1000, &off));
    cr_assert_null(elfsym_cache_name("/etc/hostname", 0x10, NULL), "not ELF");
}

/* ---- the indexed cache, refereed by a search of the whole table and by dladdr ---- */

struct text_range {
    const char *want; /* substring of the module's path */
    const char *path;
    uintptr_t bias, lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text_range *t = arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, t->want))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            t->path = info->dlpi_name;
            t->bias = info->dlpi_addr;
            t->lo = info->dlpi_addr + ph->p_vaddr;
            t->hi = t->lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static const void *map_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s", path);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    cr_assert_neq(p, MAP_FAILED);
    *size = (size_t)st.st_size;
    return p;
}

/* Every 97th address of libc's code: the index names what dladdr names (the same symbol
 * address; among aliases the name may be another of that address's names), and nothing where
 * dladdr names nothing. */
Test(elfsym, exported_symbols_are_dladdrs)
{
    struct text_range t = {.want = "libc.so"};
    cr_assert(dl_iterate_phdr(find_text, &t), "libc is loaded");
    unsigned named = 0;
    for (uintptr_t a = t.lo; a < t.hi; a += 97) {
        Dl_info info;
        int by_dladdr = dladdr((void *)a, &info) && info.dli_sname;
        const char *name = NULL;
        uint64_t start = 0;
        int found = elfsym_cache_exported(t.path, a - t.bias, &name, &start);
        cr_assert_geq(found, 0, "libc has a .dynsym");
        cr_assert_eq(found, by_dladdr, "%#lx: index %d, dladdr %d (%s)", (unsigned long)a, found,
                     by_dladdr, by_dladdr ? info.dli_sname : "");
        if (found) {
            cr_assert_eq(t.bias + start, (uintptr_t)info.dli_saddr, "%s against %s", name,
                         info.dli_sname);
            named++;
        }
    }
    cr_assert_gt(named, 1000, "a real sample: %u named", named);
}

/* The program's own code, static functions included: the index names every address as a
 * search of the whole .symtab does, with the same offset. */
Test(elfsym, indexed_names_are_the_searches)
{
    struct text_range t = {.want = ""};
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    dl_iterate_phdr(find_text, &t); /* the main program comes first */
    size_t size;
    const void *img = map_file(exe, &size);
    struct elfsym_table tab;
    cr_assert_eq(elfsym_table_of(img, size, ELFSYM_FULL, &tab), 0);
    unsigned named = 0;
    for (uintptr_t a = t.lo; a < t.hi; a += 13) {
        uint64_t off_index = 0;
        const Elf64_Sym *s = elfsym_reference_find(&tab, ELFSYM_FULL, a - t.bias);
        const char *whole = s ? tab.strs + s->st_name : NULL;
        const char *index = elfsym_cache_name(exe, a - t.bias, &off_index);
        cr_assert_eq(!whole, !index, "%#lx: whole table %s, index %s", (unsigned long)a,
                     whole ? whole : "-", index ? index : "-");
        if (whole) {
            cr_assert_str_eq(index, whole);
            cr_assert_eq(off_index, a - t.bias - s->st_value);
            named++;
        }
    }
    cr_assert_gt(named, 100, "a real sample: %u named", named);
    uint64_t off;
    cr_assert_str_eq(elfsym_cache_name(exe, (uintptr_t)&hidden_helper - t.bias + 1, &off),
                     "hidden_helper");
    cr_assert_eq(off, 1);
}

Test(elfsym, the_cache_says_when_it_cannot_read_a_table)
{
    const char *name;
    uint64_t start;
    cr_assert_eq(elfsym_cache_exported("/nonexistent", 0x1000, &name, &start), -1);
    cr_assert_eq(elfsym_cache_exported("/etc/hostname", 0x10, &name, &start), -1, "not ELF");
    cr_assert_eq(elfsym_cache_exported("", 0x10, &name, &start), -1);
}
