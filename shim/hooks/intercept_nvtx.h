/* intercept_nvtx: libmemshim is also an NVTX v3 injection library, so the ranges of an
 * unmodified program (nvtxRangePushA("optimizer"), PyTorch's torch.cuda.nvtx, NCCL's domain
 * ranges) become phases of the trace. Exports InitializeInjectionNvtx2. */
#ifndef MEMSHIM_INTERCEPT_NVTX_H
#define MEMSHIM_INTERCEPT_NVTX_H

/* At load: point NVTX_INJECTION64_PATH at this library unless a tool already set it. */
void intercept_nvtx_setup(void);

#endif /* MEMSHIM_INTERCEPT_NVTX_H */
