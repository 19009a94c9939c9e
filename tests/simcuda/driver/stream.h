/* stream: streams and events. Every operation completes before its call returns, so a
 * stream is only a validated handle and an event only a timestamp. */
#ifndef SIMCU_STREAM_H
#define SIMCU_STREAM_H

#include <cuda.h>

/* CUDA_SUCCESS for NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD and live created streams. */
CUresult stream_check(CUstream stream);

#endif
