/* README.md's environment table is the one shim/options.c generates (gen_env_table). */
#include <criterion/criterion.h>

#include "core_util.h"
#include "options.h"

Test(readme, env_table_matches_options)
{
    const char *src = getenv("MEMSHIM_SOURCE_DIR");
    cr_assert(src, "MEMSHIM_SOURCE_DIR is set by ctest");
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", src);
    size_t len;
    char *readme = core_read_file(path, &len);
    cr_assert(readme, "cannot read %s", path);
    const char *open = "<!-- section:env -->\n", *close = "<!-- /section:env -->";
    char *begin = strstr(readme, open), *end = begin ? strstr(begin, close) : NULL;
    cr_assert(begin && end, "README.md has no env section");
    begin += strlen(open);
    *end = '\0';
    char want[16384];
    size_t n = options_format_env_table(want, sizeof want);
    cr_assert_lt(n, sizeof want);
    cr_expect_str_eq(begin, want,
                     "README.md's env section differs from the options table: run "
                     "build/tests/gen_env_table and paste its output between the markers");
    free(readme);
}
