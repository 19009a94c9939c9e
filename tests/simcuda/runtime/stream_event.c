/* stream_event: streams and events; cudaStream_t and cudaEvent_t are the driver's handles. */
#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!pStream)
        return rt_error_set(cudaErrorInvalidValue);
    /* cudaStreamNonBlocking == CU_STREAM_NON_BLOCKING. */
    if (priority == 0 || !drv->cuStreamCreateWithPriority)
        return rt_error_cu(RT_CALL(drv, cuStreamCreate, (CUstream *)pStream, flags));
    return rt_error_cu(drv->cuStreamCreateWithPriority((CUstream *)pStream, flags, priority));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!stream)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    return rt_error_cu(RT_CALL(drv, cuStreamDestroy_v2, (CUstream)stream));
}

static cudaError_t stream_sync(bool per_thread, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (per_thread)
        return rt_error_cu(RT_CALL(drv, cuStreamSynchronize_ptsz, (CUstream)stream));
    return rt_error_cu(RT_CALL(drv, cuStreamSynchronize, (CUstream)stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return stream_sync(false, stream);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return stream_sync(true, stream);
}

/* cudaErrorNotReady is an answer, not an error: it is not recorded as the last error. */
static cudaError_t stream_query(bool per_thread, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    CUresult res = per_thread ? RT_CALL(drv, cuStreamQuery_ptsz, (CUstream)stream)
                              : RT_CALL(drv, cuStreamQuery, (CUstream)stream);
    return res == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : rt_error_cu(res);
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    return stream_query(false, stream);
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return stream_query(true, stream);
}

static cudaError_t stream_wait(bool per_thread, cudaStream_t stream, cudaEvent_t event,
                               unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (per_thread)
        return rt_error_cu(
            RT_CALL(drv, cuStreamWaitEvent_ptsz, (CUstream)stream, (CUevent)event, flags));
    return rt_error_cu(RT_CALL(drv, cuStreamWaitEvent, (CUstream)stream, (CUevent)event, flags));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait(false, stream, event, flags);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait(true, stream, event, flags);
}

/* cudaStreamCallback_t and cudaHostFn_t have the ABI of CUstreamCallback and CUhostFn. */
static cudaError_t add_callback(bool per_thread, cudaStream_t stream, cudaStreamCallback_t callback,
                                void *userData, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!callback)
        return rt_error_set(cudaErrorInvalidValue);
    __typeof__(&cuStreamAddCallback) fn =
        per_thread ? drv->cuStreamAddCallback_ptsz : drv->cuStreamAddCallback;
    if (!fn)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(fn((CUstream)stream, (CUstreamCallback)callback, userData, flags));
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void *userData, unsigned int flags)
{
    return add_callback(false, stream, callback, userData, flags);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                       void *userData, unsigned int flags)
{
    return add_callback(true, stream, callback, userData, flags);
}

static cudaError_t launch_host_func(bool per_thread, cudaStream_t stream, cudaHostFn_t fn,
                                    void *userData)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!fn)
        return rt_error_set(cudaErrorInvalidValue);
    __typeof__(&cuLaunchHostFunc) launch =
        per_thread ? drv->cuLaunchHostFunc_ptsz : drv->cuLaunchHostFunc;
    if (!launch)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(launch((CUstream)stream, (CUhostFn)fn, userData));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(false, stream, fn, userData);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(true, stream, fn, userData);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!event)
        return rt_error_set(cudaErrorInvalidValue);
    /* cudaEvent* flags have the values of CU_EVENT_*. */
    return rt_error_cu(RT_CALL(drv, cuEventCreate, (CUevent *)event, flags));
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

static cudaError_t event_record(bool per_thread, cudaEvent_t event, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!event)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    if (per_thread)
        return rt_error_cu(RT_CALL(drv, cuEventRecord_ptsz, (CUevent)event, (CUstream)stream));
    return rt_error_cu(RT_CALL(drv, cuEventRecord, (CUevent)event, (CUstream)stream));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(false, event, stream);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(true, event, stream);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!event)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    return rt_error_cu(RT_CALL(drv, cuEventSynchronize, (CUevent)event));
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!event)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    CUresult res = RT_CALL(drv, cuEventQuery, (CUevent)event);
    return res == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : rt_error_cu(res);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!ms)
        return rt_error_set(cudaErrorInvalidValue);
    if (!start || !end)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    return rt_error_cu(RT_CALL(drv, cuEventElapsedTime_v2, ms, (CUevent)start, (CUevent)end));
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!event)
        return rt_error_set(cudaErrorInvalidResourceHandle);
    return rt_error_cu(RT_CALL(drv, cuEventDestroy_v2, (CUevent)event));
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuCtxGetStreamPriorityRange, leastPriority, greatestPriority));
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    return rt_error_cu(RT_CALL(drv, cuStreamGetPriority, (CUstream)hStream, priority));
}

/* Events are timestamps taken at once: no flag changes what a record does. */
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return rt_error_set(cudaErrorInvalidValue);
    return event_record(false, event, stream);
}
