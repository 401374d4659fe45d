/* tp_hash: word-at-a-time multiply-mix hashing (in the spirit of wyhash/xxh3, much simpler). */
#include "tp_hash.h"

#include <string.h>

static uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t nonzero(uint64_t h) {
    return h ? h : 0x9e3779b97f4a7c15ULL;
}

uint64_t tp_hash_bytes(const void *p, size_t len, uint64_t seed) {
    const unsigned char *b = p;
    uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        h = tp_hash_mix64(h ^ load64(b + i)) * 0x2545f4914f6cdd1dULL;
    uint64_t tail = 0;
    memcpy(&tail, b + i, len - i);
    return nonzero(tp_hash_mix64(h ^ tail ^ (uint64_t)(len - i) << 56));
}

uint64_t tp_hash_table_bytes(const void *p, size_t len, uint64_t seed) {
    const unsigned char *b = p;
    uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) { /* each step a bijection of the word: no two collide */
        h = (h ^ load64(b + i)) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, b + i, len - i);
    return nonzero(tp_hash_mix64(h ^ tail ^ (uint64_t)(len - i) << 56));
}

uint64_t tp_hash_u64s(const uint64_t *w, size_t n, uint64_t seed) {
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    for (size_t i = 0; i < n; i++)
        h = tp_hash_mix64(h ^ w[i]) * 0x2545f4914f6cdd1dULL;
    return nonzero(tp_hash_mix64(h));
}
