/* tp_hash: small, fast non-cryptographic hashes for interning (strings, stacks) and
 * a CRC-free integrity check is NOT this module's job (chunks use the zlib CRC-32, computed
 * by libdeflate). */
#ifndef TP_HASH_H
#define TP_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit hash of `len` bytes at `p` (any alignment). Never returns 0, so 0 can mean "empty". */
uint64_t tp_hash_bytes(const void *p, size_t len, uint64_t seed);

/* 64-bit hash of `len` bytes for tables that live in memory only (the model's string pool):
 * one multiply and a shift per 8 bytes, tp_hash_mix64 once at the end (tp_hash_bytes mixes
 * every word fully: ~2x the time, 3 % of `report`'s CPU time on a Kineto trace, whose long
 * kernel and operator names are each hashed once per event). Never returns 0. Its values
 * differ from tp_hash_bytes': not for values that are written or shown. */
uint64_t tp_hash_table_bytes(const void *p, size_t len, uint64_t seed);

/* 64-bit hash of `n` words; used for call stacks. Never returns 0. */
uint64_t tp_hash_u64s(const uint64_t *w, size_t n, uint64_t seed);

/* Finalizer that spreads the bits of one 64-bit value (e.g. a pointer). */
static inline uint64_t tp_hash_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
