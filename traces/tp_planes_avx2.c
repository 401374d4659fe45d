/* tp_planes_avx2: tp_planes.c compiled a second time with -mavx2, for its decoders and encoders
 * of filters 2 and 3 (tp_planes__decode_avx2, tp_planes__encode_avx2 and their _columns_ twins).
 * The code is the same; where __AVX2__ is defined it moves 32 body words per transpose and adds
 * or subtracts four lanes at a time. The public functions call it only after
 * __builtin_cpu_supports("avx2"), so nothing here runs on a CPU without AVX2. Built on x86-64 only
 * (traces/CMakeLists.txt). */
#ifndef __AVX2__
#error "tp_planes_avx2.c is compiled with -mavx2"
#endif
#include "tp_planes.c"
