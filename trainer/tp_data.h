/* tp_data: a deterministic synthetic digit dataset, generated in memory.
 *
 * Sample i of a dataset with seed s is a 28x28 grayscale image of a seven-segment digit
 * (label 0-9) drawn with random size, position, slant and stroke width, antialiased, plus
 * Gaussian pixel noise. Everything derives from (seed, i), so any thread can produce any
 * sample, in any order, and get the same bytes. It is learnable (a small CNN passes 95%)
 * but not trivial (position and shape vary, noise is strong enough to matter).
 *
 * The training transform (tp_data_augment) is a random rotation (+-12 degrees) and shift
 * (+-2 px) by bilinear resampling plus extra noise. `cost` repeats the resampling pass that
 * many times; the result does not depend on cost, only the CPU time does (a knob for
 * input-pipeline load, like an expensive decode or augmentation). */
#ifndef TP_DATA_H
#define TP_DATA_H

#include <stdint.h>

#define TP_DATA_SIDE 28
#define TP_DATA_PIXELS (TP_DATA_SIDE * TP_DATA_SIDE)
#define TP_DATA_CLASSES 10

/* Renders sample `index` of dataset `seed` into img[784]; returns its label. */
int32_t tp_data_sample(uint64_t seed, uint64_t index, float *img);

/* Augments img in place with the transform drawn for (seed, index); cost >= 1 resampling
 * passes (cost <= 0 skips the transform). scratch must hold TP_DATA_PIXELS floats. */
void tp_data_augment(uint64_t seed, uint64_t index, int cost, float *img, float *scratch);

#endif
