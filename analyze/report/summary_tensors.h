/* summary_tensors: the tensor view (analyze/model/tensors.h) in `summary`, as text and JSON.
 * Both print nothing (JSON: `"tensors": null`) when the trace has no tensor records. */
#ifndef ANALYZE_SUMMARY_TENSORS_H
#define ANALYZE_SUMMARY_TENSORS_H

#include <stdio.h>

#include "json.h"
#include "model.h"

void summary_tensors_print(FILE *out, struct model *m);
void summary_tensors_json(struct json *j, struct model *m);

#endif /* ANALYZE_SUMMARY_TENSORS_H */
