/* Fuzzes the estimate config parser and, for inputs that parse and check, the model itself:
 * no input may crash, hang, or produce a total below any of its parts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "estimate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct estimate_config c;
    char err[512];
    estimate_config_defaults(&c);
    if (estimate_config_parse(&c, (const char *)data, size, "fuzz", err, sizeof err) != 0)
        return 0;
    if (estimate_config_check(&c, err, sizeof err) != 0)
        return 0;
    struct estimate_result r;
    estimate_compute(&c, &r);
    for (int i = 0; i < MST_CATEGORY_MAX; i++) {
        if (r.bytes[i] > r.total)
            abort();
    }
    return 0;
}
