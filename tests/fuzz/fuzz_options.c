/* libFuzzer target: the option parsers (shim/options.c). The first byte picks the option,
 * the rest is its value. */
#include "log.h"
#include "compat.h"
#include "options.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    log_mute(1);
    char value[2048];
    size_t n = size - 1 < sizeof value - 1 ? size - 1 : sizeof value - 1;
    memcpy(value, data + 1, n);
    value[n] = '\0';
    options_reset();
    enum options_id id = (enum options_id)(data[0] % OPT_COUNT);
    int device = data[0] / OPT_COUNT % MS_MAX_DEVICES;
    options_set(id, device, value);
    struct opt_size s;
    if (options_parse_size(value, 1, &s) == 0 && s.ppm > 1000000)
        abort();
    uint64_t u;
    if (options_parse_uint(value, 5, 60000, &u) == 0 && (u < 5 || u > 60000))
        abort();
    uint64_t limit = options_limit(device, 80ull << 30);
    if (options_limit_is_percent(device) && limit > 80ull << 30)
        abort();
    return 0;
}
