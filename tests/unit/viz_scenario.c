#include "viz_scenario.h"

#include "tracegen.h"

#define ADDR(i) ((1ull << 40) + (uint64_t)(i) * (256ull << 20))

struct sites {
    uint32_t init_params, forward, adam, scratch;
};

static struct sites define(struct tracegen *g, uint64_t ceiling)
{
    uint32_t mod = tracegen_module(g, "/opt/app/libapp.so", 0x400000, 0x100000);
    uint32_t main_frame = tracegen_frame(g, 0, mod, "main", 0x401000, 0x1000);
    struct sites s = {
        .init_params = tracegen_frame(g, main_frame, mod, "init_params", 0x402000, 0x2000),
        .forward = tracegen_frame(g, main_frame, mod, "forward", 0x403000, 0x3000),
        .adam = tracegen_frame(g, main_frame, mod, "adam_step", 0x404000, 0x4000),
        .scratch = tracegen_frame(g, main_frame, mod, "scratch", 0x405000, 0x5000),
    };
    tracegen_thread(g, 4242, "main");
    tracegen_device(g, 0, "Sim GPU", 16ull << 30, ceiling);
    return s;
}

static void residency(struct tracegen *g, uint64_t t, uint8_t event, uint64_t addr, uint64_t bytes)
{
    struct mst_rec_residency r = {.time_ns = t,
                                  .addr = addr,
                                  .bytes = bytes,
                                  .duration_ns = 500,
                                  .thread = 1,
                                  .event = event};
    tracegen_residency(g, &r);
}

static int forward(struct tracegen *g, const struct viz_scenario *s, const struct sites *site,
                   uint32_t phase)
{
    int n = 0;
    uint64_t act = s->activation_mib * VIZ_MIB;
    tracegen_phase(g, 11000, 1, phase, 1);
    tracegen_malloc(g, 12000, 1, ADDR(2), act, MST_CAT_ACTIVATION, site->forward, phase);
    tracegen_malloc(g, 13000, 1, ADDR(3), act, MST_CAT_ACTIVATION, site->forward, phase);
    n += 3;
    if (s->with_spill) {
        residency(g, 14000, MST_RES_SPILL, ADDR(2), act);
        residency(g, 15000, MST_RES_RESTORE, ADDR(2), act);
        n += 2;
    }
    if (s->with_oom) {
        struct mst_rec_oom o = {.time_ns = 16000,
                                .request = 128 * VIZ_MIB,
                                .ceiling = 64 * VIZ_MIB,
                                .resident = 32 * VIZ_MIB + 2 * act,
                                .thread = 1,
                                .site = site->forward,
                                .phase = phase,
                                .kind = MST_KIND_CUDA_MALLOC};
        o.by_category[MST_CAT_PARAMETER] = 32 * VIZ_MIB;
        o.by_category[MST_CAT_ACTIVATION] = 2 * act;
        tracegen_oom(g, &o);
        n++;
    }
    tracegen_phase(g, 17000, 1, phase, 0);
    return n + 1;
}

int viz_scenario_write(const char *path, const struct viz_scenario *s)
{
    struct tracegen_header h = {.pid = 777,
                                .rank = MST_NO_RANK,
                                .host = "vizhost",
                                .stack_depth = 24,
                                .flags = MST_FILE_F_STACKS};
    struct tracegen *g = tracegen_new_file(path, &h);
    if (!g)
        return -1;
    uint64_t ceiling = s->with_ceiling ? 64 * VIZ_MIB : 0;
    struct sites site = define(g, ceiling);
    uint32_t fwd = tracegen_string(g, "forward"), bwd = tracegen_string(g, "backward"),
             opt = tracegen_string(g, "optimizer");
    int n = 0;
    if (s->with_ceiling)
        tracegen_ceiling(g, 1000, ceiling, MST_POLICY_SPILL), n++;
    tracegen_malloc(g, 2000, 1, ADDR(0), 16 * VIZ_MIB, MST_CAT_PARAMETER, site.init_params, 0);
    tracegen_malloc(g, 3000, 1, ADDR(1), 16 * VIZ_MIB, MST_CAT_PARAMETER, site.init_params, 0);
    tracegen_step(g, 10000, 1, 0);
    n += 3 + forward(g, s, &site, fwd);
    tracegen_phase(g, 18000, 1, bwd, 1);
    tracegen_dealloc(g, 19000, 1, ADDR(3));
    tracegen_dealloc(g, 20000, 1, ADDR(2));
    tracegen_phase(g, 21000, 1, bwd, 0);
    tracegen_phase(g, 22000, 1, opt, 1);
    tracegen_malloc(g, 23000, 1, ADDR(4), 8 * VIZ_MIB, MST_CAT_OPTIMIZER_STATE, site.adam, opt);
    tracegen_phase(g, 24000, 1, opt, 0);
    tracegen_step(g, 30000, 1, 1);
    tracegen_malloc(g, 31000, 1, ADDR(5), 4 * VIZ_MIB, MST_CAT_UNKNOWN, site.scratch, 0);
    tracegen_dealloc(g, 32000, 1, ADDR(5));
    n += 10;
    int rc = tracegen_finish(g);
    tracegen_free(g);
    return rc == 0 ? n : -1;
}
