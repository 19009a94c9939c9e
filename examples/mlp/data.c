/* Synthetic classification data labelled by a random teacher network. */
#include <math.h>
#include <stdlib.h>

#include "data.h"

#define TEACHER_HIDDEN 32

/* splitmix64: tiny, fast, and identical on every platform. */
uint64_t data_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float data_rng_uniform(uint64_t *state, float lo, float hi)
{
    /* 24 random bits: exactly representable, so the result is in [0, 1). */
    float u = (float)(data_rng_next(state) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

/* Box-Muller; the uniform is shifted off zero so logf is finite. */
static float rng_normal(uint64_t *state)
{
    float u1 = data_rng_uniform(state, 0.0f, 1.0f) + 1.0f / 33554432.0f;
    float u2 = data_rng_uniform(state, 0.0f, 1.0f);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

static void fill_normal(uint64_t *state, float *w, long n, float scale)
{
    for (long i = 0; i < n; i++)
        w[i] = scale * rng_normal(state);
}

int data_init(struct data *d, long input, long classes, uint64_t seed)
{
    *d = (struct data){.input = input, .classes = classes, .teacher_hidden = TEACHER_HIDDEN};
    /* A stream of its own, so the teacher does not depend on how the student is initialized. */
    d->rng = seed ^ 0x7eac4e7d5eed0001ULL;
    d->w1 = malloc(sizeof(float) * TEACHER_HIDDEN * input);
    d->w2 = malloc(sizeof(float) * classes * TEACHER_HIDDEN);
    d->hidden = malloc(sizeof(float) * TEACHER_HIDDEN);
    if (!d->w1 || !d->w2 || !d->hidden) {
        data_destroy(d);
        return -1;
    }
    fill_normal(&d->rng, d->w1, TEACHER_HIDDEN * input, 1.0f / sqrtf((float)input));
    fill_normal(&d->rng, d->w2, classes * TEACHER_HIDDEN, 1.0f / sqrtf((float)TEACHER_HIDDEN));
    return 0;
}

void data_destroy(struct data *d)
{
    free(d->w1);
    free(d->w2);
    free(d->hidden);
    d->w1 = d->w2 = d->hidden = NULL;
}

/* argmax over classes of w2 * tanh(w1 * x). */
static int teacher_label(struct data *d, const float *x)
{
    for (long h = 0; h < d->teacher_hidden; h++) {
        float s = 0.0f;
        for (long i = 0; i < d->input; i++)
            s += d->w1[h * d->input + i] * x[i];
        d->hidden[h] = tanhf(s);
    }
    int best = 0;
    float best_score = -INFINITY;
    for (long c = 0; c < d->classes; c++) {
        float s = 0.0f;
        for (long h = 0; h < d->teacher_hidden; h++)
            s += d->w2[c * d->teacher_hidden + h] * d->hidden[h];
        if (s > best_score) {
            best_score = s;
            best = (int)c;
        }
    }
    return best;
}

void data_next_batch(struct data *d, long batch, float *x, int *labels)
{
    for (long b = 0; b < batch; b++) {
        fill_normal(&d->rng, x + b * d->input, d->input, 1.0f);
        labels[b] = teacher_label(d, x + b * d->input);
    }
}
