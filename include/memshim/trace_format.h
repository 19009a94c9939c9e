/* memshim trace file format: the only definition, shared by the shim (writer) and
 * memshim-analyze (reader). Everything is little-endian. See README.md "Trace format".
 *
 * File = mst_file_header, then records. Every record starts with mst_record_header whose
 * `length` counts the payload bytes that follow it, so a reader can skip kinds it does not
 * know and detect a truncated tail. Payloads are the packed structs below; variable-length
 * payloads end with bytes whose length is implied by the record length (names, paths).
 *
 * Ordering: the writer serialises records into one shared buffer by atomic reservation, so
 * records appear in the file in the order their events were logged. A free is logged before
 * the real free and an allocation after the real allocation returns, so for any one address
 * its free always precedes the record of the next allocation at that address. Times are
 * nanoseconds since `clock_base_ns` (CLOCK_MONOTONIC); they are monotonic per thread.
 *
 * Ids: string, module and frame ids are assigned by the writer starting at 1; 0 means
 * "none". A definition record (STRING, MODULE, FRAME, THREAD) always precedes any record
 * that refers to its id.
 */
#ifndef MEMSHIM_TRACE_FORMAT_H
#define MEMSHIM_TRACE_FORMAT_H

#include <stdint.h>

#define MST_MAGIC        "MEMSHIM\x1a"
#define MST_MAGIC_LEN    8
#define MST_VERSION      1
#define MST_HOST_LEN     64
#define MST_LABEL_LEN    64
#define MST_NO_RANK      0xffffffffu
#define MST_MAX_RECORD   (1u << 20) /* readers reject a longer record as corrupt */
#define MST_CATEGORY_MAX 10

/* Memory categories. UNKNOWN is 0 so zeroed state means "not classified". */
enum mst_category {
    MST_CAT_UNKNOWN = 0,
    MST_CAT_PARAMETER = 1,
    MST_CAT_GRADIENT = 2,
    MST_CAT_OPTIMIZER_STATE = 3,
    MST_CAT_ACTIVATION = 4,
    MST_CAT_KV_CACHE = 5,
    MST_CAT_WORKSPACE = 6,
    MST_CAT_TEMPORARY = 7,
    MST_CAT_COMMUNICATION = 8,
    MST_CAT_INPUT = 9,
    /* Analyzer only, never in a record: bytes a framework's caching allocator holds in its
     * segments (MST_ALLOC_F_POOL) that no tensor (MST_REC_TENSOR_ALLOC) uses. Outside
     * MST_CATEGORY_MAX, so the fixed-size arrays of the records keep their layout. */
    MST_CAT_CACHED = 10,
};

/* Names as users write them (rules files, memshim_tag_push, reports), indexed by category. */
#define MST_CATEGORY_NAMES                                                                         \
    {                                                                                              \
        "unknown", "parameter", "gradient", "optimizer_state", "activation", "kv_cache",           \
            "workspace", "temporary", "communication", "input"                                     \
    }

/* Which API call produced an allocation. */
enum mst_alloc_kind {
    MST_KIND_CUDA_MALLOC = 1,
    MST_KIND_CUDA_MALLOC_PITCH = 2,
    MST_KIND_CUDA_MALLOC_3D = 3,
    MST_KIND_CUDA_MALLOC_MANAGED = 4,
    MST_KIND_CUDA_MALLOC_ASYNC = 5,
    MST_KIND_CUDA_MALLOC_FROM_POOL_ASYNC = 6,
    MST_KIND_CU_MEM_ALLOC = 7,
    MST_KIND_CU_MEM_ALLOC_PITCH = 8,
    MST_KIND_CU_MEM_ALLOC_MANAGED = 9,
    MST_KIND_CU_MEM_ALLOC_ASYNC = 10,
    MST_KIND_CU_MEM_ALLOC_FROM_POOL_ASYNC = 11,
    MST_KIND_CU_MEM_CREATE = 12, /* physical memory; `addr` is the handle (MST_ALLOC_F_HANDLE) */
    MST_KIND_SHIM_VMM = 13,      /* served by the shim's own VMM backing (spill/recompute) */
    MST_KIND_MAX = 14,
};

#define MST_KIND_NAMES                                                                             \
    {                                                                                              \
        "none", "cudaMalloc", "cudaMallocPitch", "cudaMalloc3D", "cudaMallocManaged",              \
            "cudaMallocAsync", "cudaMallocFromPoolAsync", "cuMemAlloc", "cuMemAllocPitch",         \
            "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemCreate",      \
            "shim-vmm"                                                                             \
    }

enum mst_record_kind {
    MST_REC_STRING = 1,      /* mst_rec_string + bytes */
    MST_REC_MODULE = 2,      /* mst_rec_module + path bytes */
    MST_REC_FRAME = 3,       /* mst_rec_frame: one node of the call-site prefix tree */
    MST_REC_THREAD = 4,      /* mst_rec_thread + name bytes */
    MST_REC_DEVICE = 5,      /* mst_rec_device + name bytes */
    MST_REC_ALLOC = 6,       /* mst_rec_alloc */
    MST_REC_FREE = 7,        /* mst_rec_free */
    MST_REC_MAP = 8,         /* mst_rec_map: cuMemMap of a handle at a virtual address */
    MST_REC_UNMAP = 9,       /* mst_rec_map (handle 0 when unknown) */
    MST_REC_PHASE_PUSH = 10, /* mst_rec_phase */
    MST_REC_PHASE_POP = 11,  /* mst_rec_phase (name_id of the range being closed, or 0) */
    MST_REC_STEP = 12,       /* mst_rec_step */
    MST_REC_CEILING = 13,    /* mst_rec_ceiling */
    MST_REC_OOM = 14,        /* mst_rec_oom */
    MST_REC_RETAG = 15,      /* mst_rec_retag: category of a live allocation changed */
    MST_REC_OP = 16,         /* mst_rec_op: a GEMM, copy, set or kernel launch (access tracking) */
    MST_REC_ACCESS = 17,     /* mst_rec_access: one byte range touched by the preceding OP */
    MST_REC_RESIDENCY = 18,  /* mst_rec_residency: spill/restore/prefetch/drop/recompute */
    MST_REC_MEASURE = 19,    /* mst_rec_measure: link bandwidth / GEMM rate measured at start */
    MST_REC_SUMMARY = 20,    /* mst_rec_summary: clean end of trace, written once at exit */
    /* mst_rec_checksum: the CRC-32C of the `bytes` bytes that follow it (the records of one
     * write-out). Readers that do not know it skip it like any kind past their last. */
    MST_REC_CHECKSUM = 21,
    /* Tensors inside a caching allocator's segments (PyTorch's, shim/hooks/torch_alloc.c):
     * not charged (their segment is), they say which bytes of it hold data, and for whom. */
    MST_REC_TENSOR_ALLOC = 22, /* mst_rec_tensor_alloc */
    MST_REC_TENSOR_FREE = 23,  /* mst_rec_tensor_free */
    /* Repeated operations (22 and 23 are taken). OP_DEFINE names a shape: the OP record right
     * after it and that OP's ACCESS records, all but the OP's time. OP_REPEAT is one more OP
     * of a defined shape, later on the same thread: a reader hands out the shape's OP (with
     * the repeat's time) and ACCESS records in its place, as if they had been written out. */
    MST_REC_OP_DEFINE = 24, /* mst_rec_op_define, then the OP and its ACCESS records */
    MST_REC_OP_REPEAT = 25, /* mst_rec_op_repeat */
    /* PyTorch's autograd node of the tensor of the TENSOR_ALLOC the same thread wrote last
     * (shim/hooks/torch_alloc.c): which backward node allocated it, or which node's forward
     * operation was running when it was allocated. */
    MST_REC_AUTOGRAD = 26, /* mst_rec_autograd */
};

#pragma pack(push, 1)

struct mst_file_header {
    char magic[MST_MAGIC_LEN];
    uint16_t version;
    uint16_t header_size; /* sizeof(struct mst_file_header) + extensions; readers skip any extra */
    uint32_t pid;
    uint32_t rank; /* MST_NO_RANK when not part of a multi-process job */
    uint32_t stack_depth;
    uint64_t clock_base_ns; /* CLOCK_MONOTONIC at shim load */
    uint64_t wall_base_ns;  /* CLOCK_REALTIME at the same moment */
    char host[MST_HOST_LEN];
    uint32_t flags; /* MST_FILE_F_* */
    uint32_t reserved;
};

/* Extension after the header, present when header_size >= sizeof(struct mst_file_header) +
 * sizeof(struct mst_file_label) (traces written before it end at the header; readers that
 * predate it skip it). */
struct mst_file_label {
    char label[MST_LABEL_LEN]; /* MEMSHIM_LABEL: the run's setting, NUL-terminated; "" if unset */
};

#define MST_FILE_F_STACKS   (1u << 0) /* call stacks were recorded */
#define MST_FILE_F_ACCESSES (1u << 1) /* access tracking was on */

struct mst_record_header {
    uint16_t kind; /* enum mst_record_kind */
    uint16_t reserved;
    uint32_t length; /* payload bytes after this header */
};

struct mst_rec_string {
    uint32_t id;
    /* followed by the bytes of the string, not NUL-terminated */
};

struct mst_rec_module {
    uint32_t id;
    uint32_t flags; /* MST_MODULE_F_* (0 in traces written before the flag existed) */
    uint64_t base;  /* load address */
    uint64_t size;
    /* followed by the path */
};

/* A Python source file (base and size 0): FRAMEs in it are Python frames, with the line in
 * `module_offset`, the function (co_qualname) in `symbol_id` and an opaque `ip`. */
#define MST_MODULE_F_PYTHON (1u << 0)

/* Call sites form a prefix tree rooted at the outermost frame: a site is the id of its
 * innermost frame node. Each node is written once. `symbol_id` names a STRING (0 if the
 * shim could not symbolize); `module_offset` lets the analyzer re-symbolize offline. */
struct mst_rec_frame {
    uint32_t id;
    uint32_t parent; /* 0 for a root node */
    uint32_t module_id;
    uint32_t symbol_id;
    uint64_t ip;
    uint64_t module_offset;
};

struct mst_rec_thread {
    uint32_t id; /* small per-process index used by other records */
    uint32_t os_tid;
    /* followed by the thread name, possibly empty */
};

struct mst_rec_device {
    uint32_t ordinal;
    uint32_t cc_major;
    uint32_t cc_minor;
    uint32_t reserved;
    uint64_t total_bytes;   /* physical memory as the driver reports it */
    uint64_t ceiling_bytes; /* 0 = no ceiling */
    /* followed by the device name */
};

struct mst_rec_alloc {
    uint64_t time_ns;
    uint64_t addr;      /* device address, or handle with MST_ALLOC_F_HANDLE */
    uint64_t size;      /* bytes charged against the ceiling */
    uint64_t requested; /* bytes the program asked for */
    uint64_t stream;    /* 0 for synchronous allocations */
    uint32_t thread;
    uint32_t site;  /* frame id of the innermost frame; 0 when stacks are off */
    uint32_t phase; /* STRING id of the innermost open phase on this thread, 0 if none */
    uint8_t kind;   /* enum mst_alloc_kind */
    uint8_t category;
    uint8_t device;
    uint8_t flags; /* MST_ALLOC_F_* */
};

/* The usual ALLOC, of a synchronous allocation (stream 0) that asked for no more than it is
 * charged: mst_rec_alloc without the stream, and with `requested` as the bytes the charge
 * rounds up (size - requested, below 2^32). Told from mst_rec_alloc by its length, as FREE's
 * two forms are: an ALLOC of fewer payload bytes than mst_rec_alloc is this form. Readers
 * hand it out as an mst_rec_alloc. thread..flags lie as in mst_rec_alloc, one after another. */
struct mst_rec_alloc_short {
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size;
    uint32_t unrequested; /* size - requested */
    uint32_t thread;
    uint32_t site;
    uint32_t phase;
    uint8_t kind;
    uint8_t category;
    uint8_t device;
    uint8_t flags;
};

/* Whether an ALLOC of `length` payload bytes is the short form (any bytes past it are a newer
 * writer's); from the long form's size on, it is the long one. */
static inline int mst_alloc_is_short(uint32_t length)
{
    return length < sizeof(struct mst_rec_alloc);
}

/* Whether a writer may use the short ALLOC: synchronous (stream 0), and charged less than 2^32
 * bytes above what was asked for. `unrequested` is size - requested, which wraps to 2^32 or more
 * when more was asked for than charged: one test with the stream's. */
static inline int mst_alloc_fits_short(uint64_t stream, uint64_t unrequested)
{
    return (stream | unrequested >> 32) == 0;
}

/* The short ALLOC as the long one: stream 0, its requested bytes whole. */
static inline struct mst_rec_alloc mst_alloc_from_short(const struct mst_rec_alloc_short *s)
{
    struct mst_rec_alloc a = {.time_ns = s->time_ns,
                              .addr = s->addr,
                              .size = s->size,
                              .requested = s->size - s->unrequested,
                              .thread = s->thread,
                              .site = s->site,
                              .phase = s->phase,
                              .kind = s->kind,
                              .category = s->category,
                              .device = s->device,
                              .flags = s->flags};
    return a;
}

#define MST_ALLOC_F_HANDLE     (1u << 0) /* addr is a CUmemGenericAllocationHandle */
#define MST_ALLOC_F_HOST       (1u << 1) /* host-located physical memory, not charged */
#define MST_ALLOC_F_CAT_TAGGED (1u << 2) /* category came from the app API or an NVTX range */
#define MST_ALLOC_F_CAT_RULE   (1u << 3) /* category came from a user or built-in rule */
/* With CAT_TAGGED: the category came from a built-in `phase:` rule alone, a guess from an NVTX
 * range's name that the analyzer may overrule by the allocation's lifetime. */
#define MST_ALLOC_F_CAT_PHASE (1u << 4)
/* Made by a framework's caching allocator while it served a tensor: a segment whose bytes
 * are split between TENSOR_ALLOC records and cached (unused) space. */
#define MST_ALLOC_F_POOL (1u << 5)

struct mst_rec_free {
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size; /* bytes released from the ceiling (as charged at alloc) */
    uint64_t stream;
    uint32_t thread;
    uint32_t site;
    uint8_t kind; /* kind of the free call's allocation path */
    uint8_t device;
    uint8_t flags; /* MST_ALLOC_F_* of the allocation */
    uint8_t reserved;
};

/* The usual FREE, of a synchronous free (stream 0), without what its ALLOC already says: the
 * bytes charged and the site. Told from mst_rec_free by its length: a FREE of fewer payload
 * bytes than mst_rec_free is this form (any bytes past it are a newer writer's). Readers that
 * hand it out as an mst_rec_free give it stream 0, and size and site 0 unless they know the
 * allocation. kind, device and flags lie as in mst_rec_free, one after another. */
struct mst_rec_free_short {
    uint64_t time_ns;
    uint64_t addr;
    uint32_t thread;
    uint8_t kind;
    uint8_t device;
    uint8_t flags; /* MST_ALLOC_F_* of the allocation */
    uint8_t reserved;
};

/* Whether a FREE of `length` payload bytes is the short form, as for mst_alloc_is_short. */
static inline int mst_free_is_short(uint32_t length)
{
    return length < sizeof(struct mst_rec_free);
}

/* A tensor's block inside a segment. `size` is the block as the caching allocator rounds it
 * (PyTorch: a multiple of 512 bytes), `requested` what the framework asked for. Category,
 * site and phase are decided as for an ALLOC; category 0 leaves it to the analyzer. */
struct mst_rec_tensor_alloc {
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size;
    uint64_t requested;
    uint32_t thread;
    uint32_t site;
    uint32_t phase;
    uint8_t category;
    uint8_t device;
    uint8_t flags; /* MST_ALLOC_F_CAT_* as for an ALLOC */
    uint8_t reserved;
};

/* The tensor at `addr` went back to the caching allocator (logged before it did). */
struct mst_rec_tensor_free {
    uint64_t time_ns;
    uint64_t addr;
    uint32_t thread;
    uint32_t site; /* 0: frees capture no stack */
    uint8_t device;
    uint8_t reserved[7];
};

struct mst_rec_map {
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size;
    uint64_t handle;
    uint32_t thread;
    uint8_t device;
    uint8_t reserved[3];
};

struct mst_rec_phase {
    uint64_t time_ns;
    uint32_t thread;
    uint32_t name_id;
};

struct mst_rec_step {
    uint64_t time_ns;
    uint64_t step;
    uint32_t thread;
    uint32_t reserved;
};

struct mst_rec_ceiling {
    uint64_t time_ns;
    uint64_t ceiling_bytes;
    uint8_t device;
    uint8_t policy; /* enum mst_policy */
    uint8_t reserved[6];
};

enum mst_policy {
    MST_POLICY_FAIL = 0,
    MST_POLICY_SPILL = 1,
    MST_POLICY_RECOMPUTE = 2,
    MST_POLICY_AUTO = 3,
};

struct mst_rec_oom {
    uint64_t time_ns;
    uint64_t request;  /* bytes the failing call asked for */
    uint64_t ceiling;  /* ceiling in force */
    uint64_t resident; /* bytes charged at that moment */
    uint64_t by_category[MST_CATEGORY_MAX];
    uint32_t thread;
    uint32_t site;
    uint32_t phase;
    uint8_t kind;
    uint8_t device;
    uint8_t reserved[2];
};

struct mst_rec_retag {
    uint64_t time_ns;
    uint64_t addr;
    uint8_t category;
    uint8_t flags;
    uint8_t device; /* ordinal of the allocation (addresses of two devices may coincide) */
    uint8_t reserved[5];
};

/* Access tracking. One OP, then `naccess` ACCESS records. */
enum mst_op_kind {
    MST_OP_GEMM = 1,
    MST_OP_MEMCPY = 2,
    MST_OP_MEMSET = 3,
    MST_OP_KERNEL = 4,
};

struct mst_rec_op {
    uint64_t time_ns;
    uint64_t stream;
    uint64_t m, n, k, batch;
    uint64_t flops;
    uint32_t thread;
    uint32_t name_id; /* entry point or kernel symbol */
    uint32_t naccess;
    uint8_t kind;                      /* enum mst_op_kind */
    uint8_t dtype_a, dtype_b, dtype_c; /* cudaDataType values, 0xff when n/a */
};

#define MST_ACCESS_READ  (1u << 0)
#define MST_ACCESS_WRITE (1u << 1)
#define MST_ACCESS_MAYBE (1u << 2) /* found by scanning kernel parameters: direction unknown */

struct mst_rec_access {
    uint64_t addr;       /* first byte touched */
    uint64_t size;       /* bytes touched */
    uint64_t alloc_addr; /* base of the tracked allocation holding it, 0 if untracked */
    uint8_t mode;        /* MST_ACCESS_* */
    uint8_t reserved[7];
};

enum mst_residency_event {
    MST_RES_SPILL = 1,
    MST_RES_RESTORE = 2,
    MST_RES_PREFETCH = 3,
    MST_RES_DROP = 4,
    MST_RES_RECOMPUTE = 5,
    /* An operation used the range in host memory mapped at its address, because the device
     * had no room for it beside the operation's other ranges: where it was (a spilled range;
     * nothing moves), or, with flops, a dropped range recomputed into host memory (from then
     * on it is as if spilled). */
    MST_RES_HOST_USE = 6,
};
#define MST_RES_LAST MST_RES_HOST_USE

struct mst_rec_residency {
    uint64_t time_ns;
    uint64_t addr; /* base of the allocation */
    uint64_t bytes;
    uint64_t duration_ns;
    uint64_t flops; /* RECOMPUTE, and HOST_USE that recomputed */
    uint32_t thread;
    uint8_t event; /* enum mst_residency_event */
    uint8_t device;
    uint8_t reserved[2];
};

struct mst_rec_measure {
    uint64_t time_ns;
    uint64_t h2d_bytes_per_s;
    uint64_t d2h_bytes_per_s;
    uint64_t gemm_flops_per_s;
    uint8_t device;
    uint8_t reserved[7];
};

struct mst_rec_summary {
    uint64_t time_ns;
    uint64_t allocations;
    uint64_t frees;
    uint64_t failed_allocations; /* out-of-memory at the ceiling or from the driver */
    uint64_t peak_resident;
    uint64_t resident_at_exit;
    uint64_t spills, restores, prefetches, drops, recomputes;
    uint64_t spilled_bytes, restored_bytes, dropped_bytes, recompute_flops;
    uint64_t events_lost; /* records the writer could not buffer */
};

#pragma pack(pop)

/* A shape holds at most this many ACCESS records (an OP with more is never defined). A shape
 * defined again replaces the earlier definition of its id. */
#define MST_SHAPE_MAX_ACCESS 16
#define MST_SHAPE_ID_MAX     (1u << 26) /* ids are below it */
struct mst_rec_op_define {
    uint32_t shape;
    uint32_t reserved;
};
struct mst_rec_op_repeat {
    uint32_t shape;
    /* after the time of the shape's last OP (its definition's, or the last repeat's) */
    uint32_t delta_ns;
};
/* The same record when the time since the shape's last OP does not fit in 32 bits (4.3 s: a
 * large model's step takes longer): told by its length; delta_ns of the short form is 0. */
struct mst_rec_op_repeat_long {
    struct mst_rec_op_repeat op_repeat;
    uint64_t delta_ns;
};

/* An autograd node is named by the number PyTorch gives it when its forward operation creates
 * it (at::sequence_number, counted per thread) and the forward thread's id
 * (at::RecordFunction::currentThreadId): a backward node and the forward allocations of the
 * same (seq, fwd_thread) belong to the same operation. */
enum mst_autograd_kind {
    /* Allocated in forward: seq is the last node this thread created before the allocation
     * (the running operation's, when it records one). Written once per node and thread: the
     * first tensor allocated after the node was made. */
    MST_AUTOGRAD_FORWARD = 0,
    /* Allocated by the backward node seq. */
    MST_AUTOGRAD_BACKWARD = 1,
};

struct mst_rec_autograd {
    uint64_t addr; /* the tensor's, as its TENSOR_ALLOC record has it */
    uint64_t seq;
    uint64_t fwd_thread;
    uint32_t thread;
    uint8_t kind; /* enum mst_autograd_kind */
    uint8_t reserved[3];
};

struct mst_rec_checksum {
    uint64_t bytes;  /* how many bytes after this record it covers */
    uint32_t crc32c; /* CRC-32C (Castagnoli), initial value 0, of those bytes */
    uint32_t reserved;
};

#endif /* MEMSHIM_TRACE_FORMAT_H */
