/* thread_name: see thread_name.h. */
#include "thread_name.h"

#include <string.h>
#include <sys/prctl.h>

void thread_name(char *out)
{
    memset(out, 0, THREAD_NAME_MAX);
    prctl(PR_GET_NAME, out, 0, 0, 0);
    out[THREAD_NAME_MAX - 1] = '\0';
}

int thread_name_has_prefix(const char *prefix)
{
    char name[THREAD_NAME_MAX];
    thread_name(name);
    return strncmp(name, prefix, strlen(prefix)) == 0;
}
