/* The name a report gives a call site. The innermost frame is the natural one, but when every
 * allocation goes through the same wrapper (a framework's device_alloc, a caching allocator)
 * it reads the same for every site. The rule: a site is named by its first frame, innermost
 * first, at which its stack differs from every other site's stack; the frames before it, shared
 * with another site, are wrappers and are skipped. A site whose stack is another's prefix
 * keeps its outermost frame.
 *
 *     struct site_labels *l = site_labels_new(m);
 *     printf("%s\n", site_labels_name(l, m, site));
 *     site_labels_free(l);
 */
#ifndef ANALYZE_SITE_LABEL_H
#define ANALYZE_SITE_LABEL_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct site_labels;

/* Labels for every site of `m` (after the replay). NULL when out of memory: callers fall back
 * to the innermost frame, as site_labels_depth(NULL, ...) does. */
struct site_labels *site_labels_new(struct model *m);
void site_labels_free(struct site_labels *l);

/* The index, innermost first, of the frame that names `site` (0 when unknown). */
size_t site_labels_depth(const struct site_labels *l, uint32_t site);
/* That frame's name, "(no stack recorded)" for site 0. Lives until model_free. */
const char *site_labels_name(const struct site_labels *l, struct model *m, uint32_t site);

#endif /* ANALYZE_SITE_LABEL_H */
