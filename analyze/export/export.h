/* `export`: a trace in another tool's format.
 *
 *     memshim-analyze export --format perfetto|memory-viz|csv [-o FILE] TRACE...
 *
 * perfetto takes several traces (the ranks of a job) into one file; memory-viz and csv take
 * one. Without -o the output goes to stdout. */
#ifndef ANALYZE_EXPORT_H
#define ANALYZE_EXPORT_H

int export_command(int argc, char **argv);

#endif /* ANALYZE_EXPORT_H */
