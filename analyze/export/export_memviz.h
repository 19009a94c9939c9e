/* `export --format memory-viz`: a PyTorch memory snapshot (torch.cuda.memory._snapshot()) that
 * pytorch.org/memory_viz and torch.cuda._memory_viz open, written with pickle.h.
 *
 *   {'device_traces': [[entry, ...] per device], 'segments': [segment, ...]}
 *
 * memshim sees the CUDA calls, not a caching allocator, so every allocation is its own
 * segment: an allocation gives 'segment_alloc' then 'alloc'; a free gives 'free_requested',
 * 'free_completed' (the viewer folds the pair into one free) then 'segment_free'. Memory the
 * shim moves off the device leaves the same way (spill, drop: free events with the extra key
 * 'memshim_event') and comes back as an allocation (restore, prefetch, recompute), so the
 * viewer's timeline shows device memory. An OOM record becomes 'oom' with 'device_free' = what
 * the ceiling still allowed. Every entry has 'addr', 'size', 'stream', 'time_us' (wall clock),
 * 'frames' ([{filename, line, name}], innermost first; filename is the module, line 0) and our
 * extra key 'category', by which the viewer colours allocations. `segments` holds what was
 * resident at the end of the trace, one block each ('active_allocated').
 *
 * Re-tagging (RETAG records) is not shown: an allocation keeps the category it was born with.
 * The viewer (MemoryViz.js) throws if some entries carry a category and none is 'unknown';
 * a trailing 'snapshot' entry with category 'unknown' is added in that case. */
#ifndef ANALYZE_EXPORT_MEMVIZ_H
#define ANALYZE_EXPORT_MEMVIZ_H

#include <stddef.h>
#include <stdio.h>

/* Writes the snapshot of one trace. Returns 0, or -1 when the trace cannot be read at all or
 * the output fails (message in err). A damaged trace gives the events before the damage,
 * with a warning on stderr. */
int export_memviz(const char *trace, FILE *out, char *err, size_t errlen);

#endif /* ANALYZE_EXPORT_MEMVIZ_H */
