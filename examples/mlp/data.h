/* Synthetic data: a fixed random "teacher" network labels Gaussian inputs, so a student MLP
 * can learn the task and its loss really decreases. Everything derives from one seed.
 */
#ifndef MLP_DATA_H
#define MLP_DATA_H

#include <stdint.h>

struct data {
    long input, classes, teacher_hidden;
    float *w1;     /* teacher_hidden x input */
    float *w2;     /* classes x teacher_hidden */
    float *hidden; /* scratch, teacher_hidden */
    uint64_t rng;
};

/* Returns 0, or -1 when out of host memory. */
int data_init(struct data *d, long input, long classes, uint64_t seed);
void data_destroy(struct data *d);

/* Fill x (batch x input, row-major) and labels (batch) with the next batch. */
void data_next_batch(struct data *d, long batch, float *x, int *labels);

/* Deterministic generator shared with the weight initialization. */
uint64_t data_rng_next(uint64_t *state);
/* Uniform in [lo, hi). */
float data_rng_uniform(uint64_t *state, float lo, float hi);

#endif /* MLP_DATA_H */
