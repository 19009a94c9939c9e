/* intercept_nvtx: libmemshim as an NVTX v3 injection library. NVTX3 is header-only, so its
 * ranges reach a tool only this way: each NVTX instance (every library that includes the
 * headers has its own) dlopens $NVTX_INJECTION64_PATH at its first call and hands our
 * InitializeInjectionNvtx2 its function table to fill. Range pushes and pops become phases. */
#include "intercept_nvtx.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "real.h"
#include "track.h"

#define NAME_MAX_BYTES 256
#define START_STACK    64

static MS_TLS int push_depth;
/* Start/End ranges may end on another thread; only those ended on their own thread, innermost
 * first, become phases here — the others stay open on the thread that started them. */
static MS_TLS nvtxRangeId_t start_stack[START_STACK];
static MS_TLS int start_depth;
static nvtxRangeId_t next_range_id = 1;

/* Wide names are narrowed to ASCII ('?' for anything else): names are matched by globs. */
static const char *narrow(const wchar_t *w, char *buf)
{
    size_t i = 0;
    for (; w && w[i] && i < NAME_MAX_BYTES - 1; i++)
        buf[i] = w[i] > 0 && w[i] < 0x80 ? (char)w[i] : '?';
    buf[i] = '\0';
    return buf;
}

/* A registered string handle is our own copy of the string (see register_string). */
static const char *attr_name(const nvtxEventAttributes_t *a, char *buf)
{
    if (!a)
        return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        return narrow(a->message.unicode, buf);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return a->message.registered ? (const char *)a->message.registered : "";
    default:
        return "";
    }
}

/* --- push / pop ------------------------------------------------------------------------------ */

static int push(const char *name)
{
    track_phase_push(name ? name : "");
    return push_depth++;
}

static int pop(void)
{
    if (push_depth == 0)
        return -1; /* unbalanced pop: NVTX's own answer */
    track_phase_pop();
    return --push_depth;
}

static int NVTX_API range_push_a(const char *message)
{
    return push(message);
}

static int NVTX_API range_push_w(const wchar_t *message)
{
    char buf[NAME_MAX_BYTES];
    return push(narrow(message, buf));
}

static int NVTX_API range_push_ex(const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    return push(attr_name(attr, buf));
}

static int NVTX_API range_pop(void)
{
    return pop();
}

static int NVTX_API domain_range_push_ex(nvtxDomainHandle_t domain,
                                         const nvtxEventAttributes_t *attr)
{
    (void)domain;
    return range_push_ex(attr);
}

static int NVTX_API domain_range_pop(nvtxDomainHandle_t domain)
{
    (void)domain;
    return pop();
}

/* --- start / end ----------------------------------------------------------------------------- */

static nvtxRangeId_t start(const char *name)
{
    nvtxRangeId_t id = __atomic_fetch_add(&next_range_id, 1, __ATOMIC_RELAXED);
    if (start_depth < START_STACK) {
        track_phase_push(name ? name : "");
        start_stack[start_depth++] = id;
    }
    return id;
}

static void end(nvtxRangeId_t id)
{
    if (start_depth > 0 && start_stack[start_depth - 1] == id) {
        start_depth--;
        track_phase_pop();
    }
}

static nvtxRangeId_t NVTX_API range_start_a(const char *message)
{
    return start(message);
}

static nvtxRangeId_t NVTX_API range_start_w(const wchar_t *message)
{
    char buf[NAME_MAX_BYTES];
    return start(narrow(message, buf));
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    return start(attr_name(attr, buf));
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
    end(id);
}

static nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t domain,
                                                    const nvtxEventAttributes_t *attr)
{
    (void)domain;
    return range_start_ex(attr);
}

static void NVTX_API domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    (void)domain;
    end(id);
}

/* --- registered strings ---------------------------------------------------------------------- */

/* Registered strings are few (a library registers its range names once) and live as long as
 * the process: the handle is a copy we never free. */
static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t domain, const char *s)
{
    (void)domain;
    return (nvtxStringHandle_t)strdup(s ? s : "");
}

static nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t domain, const wchar_t *s)
{
    char buf[NAME_MAX_BYTES];
    (void)domain;
    return (nvtxStringHandle_t)strdup(narrow(s, buf));
}

/* --- injection ------------------------------------------------------------------------------- */

struct slot {
    unsigned int id;
    NvtxFunctionPointer fn;
};

static const struct slot core_slots[] = {
    {NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)range_push_a},
    {NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)range_push_w},
    {NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)range_push_ex},
    {NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)range_pop},
    {NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)range_start_a},
    {NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)range_start_w},
    {NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)range_start_ex},
    {NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)range_end},
};

static const struct slot core2_slots[] = {
    {NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)domain_range_push_ex},
    {NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_range_pop},
    {NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)domain_range_start_ex},
    {NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)domain_range_end},
    {NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)register_string_a},
    {NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)register_string_w},
};

static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                const struct slot *slots, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
    return 1;
}

MS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
    if (!getExportTable)
        return 0;
    const NvtxExportTableCallbacks *cb = getExportTable(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
        return 0;
    const NvtxExportTableVersionInfo *vi = getExportTable(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    int ok = fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof core_slots[0]);
    fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof core2_slots[0]);
    return ok;
}

void intercept_nvtx_setup(void)
{
    Dl_info self;
    char path[PATH_MAX];
    if (getenv("NVTX_INJECTION64_PATH"))
        return; /* another tool (Nsight Systems) was chosen explicitly */
    if (!dladdr((void *)&InitializeInjectionNvtx2, &self) || !self.dli_fname || !self.dli_fname[0])
        return;
    /* NVTX dlopens the path at its first call, possibly after a chdir: make it absolute. */
    setenv("NVTX_INJECTION64_PATH", realpath(self.dli_fname, path) ? path : self.dli_fname, 0);
}
