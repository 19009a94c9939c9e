/* fp16: IEEE half and bfloat16 conversions for the CPU GEMMs (round to nearest even). */
#ifndef SIMCUDA_FP16_H
#define SIMCUDA_FP16_H

#include <stdint.h>

float fp16_half_to_float(uint16_t h);
uint16_t fp16_float_to_half(float f);
float fp16_bf16_to_float(uint16_t b);
uint16_t fp16_float_to_bf16(float f);

#endif
