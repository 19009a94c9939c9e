/* secure_env: see secure_env.h. */
#include "secure_env.h"

#include "log.h"

#include <stdlib.h>
#include <sys/auxv.h>

int secure_env_privileged(void)
{
    return getauxval(AT_SECURE) != 0;
}

const char *secure_env_get(const char *name)
{
    const char *v = secure_getenv(name);
    if (!v && secure_env_privileged() && getenv(name))
        log_error("%s is ignored: this program runs with privileges its user does not have "
                  "(setuid, setgid or file capabilities)",
                  name);
    return v;
}
