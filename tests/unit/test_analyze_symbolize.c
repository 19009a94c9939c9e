/* Demangling and offline ELF symbol lookup. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "symbolize.h"

Test(symbolize, cxx)
{
    char buf[256];
    cr_assert_str_eq(symbolize_demangle("_ZN5model6Linear7forwardERKN2at6TensorE", buf, sizeof buf),
                     "model::Linear::forward(at::Tensor const&)");
    cr_assert_str_eq(symbolize_demangle("_Z10train_stepi", buf, sizeof buf), "train_step(int)");
}

Test(symbolize, rust_legacy)
{
    char buf[256];
    cr_assert_str_eq(
        symbolize_demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", buf, sizeof buf),
        "core::ptr::drop_in_place");
    cr_assert_str_eq(symbolize_demangle("_ZN49_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$Drop$GT$"
                                        "4drop17h0123456789abcdefE",
                                        buf, sizeof buf),
                     "<alloc::vec::Vec<T> as Drop>::drop");
}

Test(symbolize, plain_and_invalid_names_unchanged)
{
    char buf[16];
    cr_assert_str_eq(symbolize_demangle("main", buf, sizeof buf), "main");
    cr_assert_str_eq(symbolize_demangle("_Zgarbage", buf, sizeof buf), "_Zgarbage");
    cr_assert_str_eq(symbolize_demangle("a_very_long_name_indeed", buf, sizeof buf),
                     "a_very_long_nam"); /* truncated, still terminated */
}

/* A function of this program, looked up through its own ELF file by module offset. */
__attribute__((noinline)) int symbolize_test_target(int x)
{
    return x * 3 + 1;
}

Test(symbolize, elf_symtab_of_this_program)
{
    Dl_info info;
    cr_assert(dladdr((void *)(uintptr_t)symbolize_test_target, &info));
    uint64_t off = (uint64_t)(uintptr_t)symbolize_test_target - (uint64_t)(uintptr_t)info.dli_fbase;
    struct symbolizer *s = symbolizer_new();
    uint64_t within = 99;
    const char *name = symbolizer_lookup(s, "/proc/self/exe", off + 2, &within);
    cr_assert_not_null(name);
    cr_assert_str_eq(name, "symbolize_test_target");
    cr_assert_eq(within, 2);
    cr_assert_null(symbolizer_lookup(s, "/nonexistent/lib.so", 0x1000, &within));
    cr_assert_null(symbolizer_lookup(s, "/etc/hostname", 0x10, &within)); /* not ELF */
    symbolizer_free(s);
}
