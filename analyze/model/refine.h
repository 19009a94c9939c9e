/* Lifetime-based refinement of `unknown` allocations, and of those a built-in phase rule alone
 * classified (MST_ALLOC_F_CAT_PHASE) (DESIGN.md, Categories).
 *
 * The model reports every death (free, or alive at exit) of an `unknown` allocation with where
 * it was born and where it died; refine_decide() then picks, per allocation site and size, the
 * category whose lifetime pattern holds the most bytes:
 *   alive before the first step and to the end      -> parameter
 *     (to the end: alive at exit, or freed in the last step)
 *   born in forward, dead in backward               -> activation
 *   born in backward, dead after the optimizer ran  -> gradient
 *   born in an optimizer phase and kept past a step -> optimizer_state
 *   born and dead without a phase change between    -> temporary
 *   born in forward, dead in the same step, not in backward -> temporary
 *   born and dead in backward of one step           -> temporary
 *   born in a step outside its phases, dead in its backward or after its phases -> input
 * Allocations that fit no pattern vote for `unknown`, so a mixed site stays unknown. One born
 * inside the steps and still alive at exit (a leak, or state kept for good) says nothing about
 * its kind and does not vote: it takes the category its site's other allocations earned.
 */
#ifndef ANALYZE_REFINE_H
#define ANALYZE_REFINE_H

#include <stdint.h>

enum refine_phase {
    REFINE_PHASE_OTHER = 0,
    REFINE_PHASE_FORWARD = 1,
    REFINE_PHASE_BACKWARD = 2,
    REFINE_PHASE_OPTIMIZER = 3,
};

/* Class of a phase name: "forward"/"fwd", "backward"/"bwd", "optim"/"adam"/"sgd"
 * (case-insensitive substrings); anything else is OTHER. */
enum refine_phase refine_phase_class(const char *name);

/* Where and when an allocation was born and died. */
struct refine_life {
    uint32_t site;
    uint64_t size;
    int64_t birth_step, death_step; /* MODEL_NO_STEP (-1) before the first step */
    enum refine_phase birth_phase, death_phase;
    uint32_t birth_seq, death_seq; /* the model's phase-change counter */
    int optimizer_since_birth;     /* an optimizer phase began after the birth */
    int alive_at_exit;
};

#define REFINE_NO_EVIDENCE (-1)
/* Born before the first step and alive at exit or freed during the steps: a parameter if it
 * lived into the last step (programs that free everything before they exit) and the trace has
 * steps at all, which only the end of the trace can tell; refine_decide() settles it. */
#define REFINE_UNTIL_STEP (-2)

/* The category the lifetime alone suggests (enum mst_category): MST_CAT_UNKNOWN when it fits
 * no pattern, REFINE_NO_EVIDENCE when it cannot tell (see above). */
int refine_classify(const struct refine_life *l);

struct refine;

struct refine *refine_new(void);
void refine_free(struct refine *r);
/* Adds one lifetime's vote, weighted by its size. Returns -1 when memory ran out. */
int refine_observe(struct refine *r, const struct refine_life *l);
/* Settles every site; call once after the last observation, with the number of the last
 * step of the trace (-1 when it had none). */
void refine_decide(struct refine *r, int64_t last_step);
/* The inferred category for (site, size), or -1 when there is none. */
int refine_lookup(const struct refine *r, uint32_t site, uint64_t size);
/* Number of (site, size) keys with an inferred category. */
uint64_t refine_inferred_keys(const struct refine *r);

#endif /* ANALYZE_REFINE_H */
