#include "stream.h"

#include "context.h"
#include "export.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define STREAM_MAGIC 0x53494d53u /* "SIMS" */
#define EVENT_MAGIC  0x53494d45u /* "SIME" */

/* The range cuCtxGetStreamPriorityRange reports: 0 is least, -5 greatest. */
#define PRIORITY_LEAST    0
#define PRIORITY_GREATEST (-5)

struct CUstream_st {
    unsigned magic;
    unsigned flags;
    int priority;
    CUcontext ctx;
    unsigned long long id;
};

struct CUevent_st {
    unsigned magic;
    unsigned flags;
    bool recorded;
    uint64_t ns; /* CLOCK_MONOTONIC at the last record */
};

static atomic_ullong next_stream_id = 16; /* below: the built-in streams */

static bool builtin_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult stream_check(CUstream stream)
{
    if (builtin_stream(stream) || stream->magic == STREAM_MAGIC)
        return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_HANDLE;
}

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = malloc(sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Out-of-range priorities are clamped, as the real driver does. */
    if (priority > PRIORITY_LEAST)
        priority = PRIORITY_LEAST;
    if (priority < PRIORITY_GREATEST)
        priority = PRIORITY_GREATEST;
    *s = (struct CUstream_st){.magic = STREAM_MAGIC,
                              .flags = flags,
                              .priority = priority,
                              .ctx = ctx_current(),
                              .id = next_stream_id++};
    *phStream = s;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, PRIORITY_LEAST);
}

SIMCU_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                 int priority)
{
    return stream_create(phStream, flags, priority);
}

SIMCU_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (builtin_stream(hStream) || hStream->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    hStream->magic = 0;
    free(hStream);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamDestroy(CUstream hStream)
{
    return cuStreamDestroy_v2(hStream);
}

static CUresult stream_ready(CUstream hStream)
{
    CUresult rc = ctx_require();
    return rc != CUDA_SUCCESS ? rc : stream_check(hStream);
}

SIMCU_EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
    return stream_ready(hStream);
}

SIMCU_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_ready(hStream);
}

SIMCU_EXPORT CUresult cuStreamQuery(CUstream hStream)
{
    return stream_ready(hStream);
}

SIMCU_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return stream_ready(hStream);
}

static CUresult stream_get(CUstream s, unsigned *flags, int *priority, unsigned long long *id)
{
    CUresult rc = stream_ready(s);
    if (rc != CUDA_SUCCESS)
        return rc;
    bool builtin = builtin_stream(s);
    if (flags)
        *flags = builtin ? 0 : s->flags;
    if (priority)
        *priority = builtin ? PRIORITY_LEAST : s->priority;
    if (id)
        *id = builtin ? (unsigned long long)(uintptr_t)s : s->id;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, flags, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

SIMCU_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    return cuStreamGetFlags(hStream, flags);
}

SIMCU_EXPORT CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    return priority ? stream_get(hStream, NULL, priority, NULL) : CUDA_ERROR_INVALID_VALUE;
}

SIMCU_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    return cuStreamGetPriority(hStream, priority);
}

SIMCU_EXPORT CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    return streamId ? stream_get(hStream, NULL, NULL, streamId) : CUDA_ERROR_INVALID_VALUE;
}

SIMCU_EXPORT CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
    return cuStreamGetId(hStream, streamId);
}

SIMCU_EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = builtin_stream(hStream) ? ctx_current() : hStream->ctx;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    return cuStreamGetCtx(hStream, pctx);
}

/* Green contexts are not simulated: a stream always belongs to a primary or created one. */
SIMCU_EXPORT CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    CUresult rc = cuStreamGetCtx(hStream, pCtx);
    if (rc == CUDA_SUCCESS && pGreenCtx)
        *pGreenCtx = NULL;
    return rc;
}

SIMCU_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx,
                                             CUgreenCtx *pGreenCtx)
{
    return cuStreamGetCtx_v2(hStream, pCtx, pGreenCtx);
}

SIMCU_EXPORT CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    return cuStreamGetDevice(hStream, device);
}

static bool event_valid(CUevent e)
{
    return e && e->magic == EVENT_MAGIC;
}

SIMCU_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!event_valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    return Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return cuStreamWaitEvent(hStream, hEvent, Flags);
}

SIMCU_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known) ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = malloc(sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *e = (struct CUevent_st){.magic = EVENT_MAGIC, .flags = Flags};
    *phEvent = e;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!event_valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    hEvent->magic = 0;
    free(hEvent);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuEventDestroy(CUevent hEvent)
{
    return cuEventDestroy_v2(hEvent);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned flags)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!event_valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    hEvent->ns = now_ns();
    hEvent->recorded = true;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0);
}

SIMCU_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0);
}

SIMCU_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return event_record(hEvent, hStream, flags);
}

SIMCU_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                  unsigned int flags)
{
    return event_record(hEvent, hStream, flags);
}

static CUresult event_ready(CUevent hEvent)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    return event_valid(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIMCU_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    return event_ready(hEvent);
}

SIMCU_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
    return event_ready(hEvent);
}

SIMCU_EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    if (!event_valid(hStart) || !event_valid(hEnd) || !hStart->recorded || !hEnd->recorded ||
        ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = (float)(((double)hEnd->ns - (double)hStart->ns) / 1e6);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

/* Host callbacks run at once: all earlier work on the stream is already done. */
static CUresult host_func(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    fn(userData);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData);
}

SIMCU_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, userData);
}

static CUresult add_callback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags)
{
    CUresult rc = stream_ready(hStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!callback || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    callback(hStream, CUDA_SUCCESS, userData);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                          void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags);
}

SIMCU_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                               void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags);
}
