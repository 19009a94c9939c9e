/* env: reading simcuda's environment variables. */
#ifndef SIMCU_ENV_H
#define SIMCU_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* A byte count with an optional k/m/g/t suffix (base 1024); def when unset or malformed. */
uint64_t env_bytes(const char *name, uint64_t def);

/* "0" is false, any other non-empty value true; def when unset. */
bool env_flag(const char *name, bool def);

/* Parses a byte count as env_bytes does; false if malformed. Exposed for tests. */
bool env_parse_bytes(const char *text, uint64_t *out);

#endif
