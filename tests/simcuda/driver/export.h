/* export: marks the entry points libcuda.so.1 exports (everything else is hidden). */
#ifndef SIMCU_EXPORT_H
#define SIMCU_EXPORT_H

#define SIMCU_EXPORT __attribute__((visibility("default")))

#endif
