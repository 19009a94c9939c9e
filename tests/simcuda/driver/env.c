#include "env.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int suffix_shift(char c)
{
    switch (tolower((unsigned char)c)) {
    case 'k':
        return 10;
    case 'm':
        return 20;
    case 'g':
        return 30;
    case 't':
        return 40;
    default:
        return -1;
    }
}

bool env_parse_bytes(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return false;
    int shift = 0;
    if (*end) {
        shift = suffix_shift(*end);
        end++;
        if (shift < 0 || (*end && tolower((unsigned char)*end) != 'b') || (*end && end[1]))
            return false;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

uint64_t env_bytes(const char *name, uint64_t def)
{
    const char *text = getenv(name);
    uint64_t v;
    if (!text || !*text)
        return def;
    if (!env_parse_bytes(text, &v)) {
        fprintf(stderr, "simcuda: ignoring malformed %s=%s\n", name, text);
        return def;
    }
    return v;
}

bool env_flag(const char *name, bool def)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return def;
    return !(text[0] == '0' && text[1] == 0);
}
