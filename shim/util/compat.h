/* compat: attribute macros used across the shim instead of scattered __attribute__s. */
#ifndef MEMSHIM_COMPAT_H
#define MEMSHIM_COMPAT_H

#define MS_EXPORT __attribute__((visibility("default")))
#define MS_HIDDEN __attribute__((visibility("hidden")))
/* initial-exec: touching thread-local state never allocates (the shim is preloaded). */
#define MS_TLS      __thread __attribute__((tls_model("initial-exec")))
#define MS_COLD     __attribute__((cold))
#define MS_NOINLINE __attribute__((noinline))
/* A fast-path function the hooks reach on every allocation: inlined into its callers, across
 * modules where link-time optimisation is on (a plain call otherwise). */
#define MS_HOT          __attribute__((always_inline)) inline
#define MS_UNUSED       __attribute__((unused))
#define MS_PRINTF(f, a) __attribute__((format(printf, f, a)))

#define ms_likely(x)   __builtin_expect(!!(x), 1)
#define ms_unlikely(x) __builtin_expect(!!(x), 0)

/* In a function whose only effect is __builtin_prefetch: GCC counts such a function pure and
 * deletes its calls (across modules too, under link-time optimisation) unless it happened to be
 * inlined first. An empty volatile asm is an effect it keeps; it emits no instruction. */
#define MS_PREFETCH_ONLY() __asm__ volatile("")

/* The compiler forgets what it knew of x's value: code after it is not copied once per value
 * of an earlier test (jump threading), where a copy would change a return address. */
#define MS_OPAQUE(x) __asm__("" : "+r"(x))

#define MS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Devices the shim keeps per-device state for; ordinals beyond are passed through. */
#define MS_MAX_DEVICES 32

#endif /* MEMSHIM_COMPAT_H */
