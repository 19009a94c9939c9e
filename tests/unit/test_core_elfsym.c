/* elfsym: static functions of a program are named from its full symbol table, which is what
 * the OOM screen shows for frames dladdr cannot name. */
#include <criterion/criterion.h>

#include "elfsym.h"

#include <link.h>

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
    char name[64];
    uint64_t off = 99;
    uint64_t vaddr = (uintptr_t)&hidden_helper - bias + 2;
    cr_assert_eq(elfsym_lookup("/proc/self/exe", vaddr, name, sizeof name, &off), 0);
    cr_assert_str_eq(name, "hidden_helper");
    cr_assert_eq(off, 2);
    cr_assert_eq(hidden_helper(1), 3);
}

Test(elfsym, misses_cleanly)
{
    char name[64];
    uint64_t off;
    cr_assert_eq(elfsym_lookup("/proc/self/exe", 1, name, sizeof name, &off), -1);
    cr_assert_eq(elfsym_lookup("/nonexistent", 0x1000, name, sizeof name, &off), -1);
    cr_assert_eq(elfsym_lookup("/etc/hostname", 0x10, name, sizeof name, &off), -1, "not ELF");
}
