/* Print the README's environment section as shim/options.c generates it. To refresh the
 * README, paste the output between the `section:env` markers. */
#include "options.h"

#include <stdio.h>

int main(void)
{
    char buf[16384];
    size_t n = options_format_env_table(buf, sizeof buf);
    fwrite(buf, 1, n < sizeof buf ? n : sizeof buf, stdout);
    return n < sizeof buf ? 0 : 1;
}
