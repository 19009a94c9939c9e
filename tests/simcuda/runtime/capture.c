/* capture: stream capture and CUDA graphs, which simcuda does not simulate. The queries answer
 * that nothing is being captured, so a program that only asks (as allocators do before each
 * allocation) runs on; starting a capture or building a graph is cudaErrorNotSupported. */
#include <cuda_runtime_api.h>

#include "context.h"
#include "error.h"

static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    (void)stream;
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!pCaptureStatus)
        return rt_error_set(cudaErrorInvalidValue);
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out,
                                     const cudaGraphEdgeData **edgeData_out,
                                     size_t *numDependencies_out)
{
    (void)id_out, (void)graph_out, (void)dependencies_out, (void)edgeData_out,
        (void)numDependencies_out;
    return cudaStreamIsCapturing(stream, captureStatus_out);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode)
        return rt_error_set(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

static cudaError_t not_simulated(void)
{
    return rt_error_set(cudaErrorNotSupported);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    (void)stream, (void)mode;
    return not_simulated();
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t *dependencies,
                                          const cudaGraphEdgeData *dependencyData,
                                          size_t numDependencies, enum cudaStreamCaptureMode mode)
{
    (void)stream, (void)graph, (void)dependencies, (void)dependencyData, (void)numDependencies,
        (void)mode;
    return not_simulated();
}

/* No capture ever began on any stream. */
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    (void)stream, (void)pGraph;
    return rt_error_set(cudaErrorIllegalState);
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                const cudaGraphEdgeData *dependencyData,
                                                size_t numDependencies, unsigned int flags)
{
    (void)stream, (void)dependencies, (void)dependencyData, (void)numDependencies, (void)flags;
    return rt_error_set(cudaErrorIllegalState);
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                             const cudaGraphNode_t *pDependencies,
                             const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                             struct cudaGraphNodeParams *nodeParams)
{
    (void)pGraphNode, (void)graph, (void)pDependencies, (void)dependencyData, (void)numDependencies,
        (void)nodeParams;
    return not_simulated();
}

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out,
                                             cudaGraph_t graph, unsigned int defaultLaunchValue,
                                             unsigned int flags)
{
    (void)pHandle_out, (void)graph, (void)defaultLaunchValue, (void)flags;
    return not_simulated();
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    (void)graph;
    return not_simulated();
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    (void)graphExec;
    return not_simulated();
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    (void)graph, (void)nodes, (void)numNodes;
    return not_simulated();
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags)
{
    (void)pGraphExec, (void)graph, (void)flags;
    return not_simulated();
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags)
{
    return cudaGraphInstantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    (void)graphExec, (void)stream;
    return not_simulated();
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                         cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
{
    (void)node, (void)pDependencies, (void)edgeData, (void)pNumDependencies;
    return not_simulated();
}

cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                      unsigned int count, unsigned int flags)
{
    (void)graph, (void)object, (void)count, (void)flags;
    return not_simulated();
}

cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr, cudaHostFn_t destroy,
                                 unsigned int initialRefcount, unsigned int flags)
{
    (void)object_out, (void)ptr, (void)destroy, (void)initialRefcount, (void)flags;
    return not_simulated();
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count)
{
    (void)object, (void)count;
    return not_simulated();
}

/* Graph memory: none is ever allocated, so the usage attributes read 0. */
cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void *value)
{
    (void)attr;
    if (device != 0)
        return rt_error_set(cudaErrorInvalidDevice);
    if (!value)
        return rt_error_set(cudaErrorInvalidValue);
    *(unsigned long long *)value = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                           void *value)
{
    (void)attr, (void)value;
    return device == 0 ? cudaSuccess : rt_error_set(cudaErrorInvalidDevice);
}
