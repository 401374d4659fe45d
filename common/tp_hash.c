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

static uint64_t load32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* b[0..n) (n < 8) as a little-endian word, by whole loads: copying the bytes into a word on the
 * stack and loading it (memcpy of a variable length) stalls the load until those stores are
 * written to the cache, after every store before them: in the Kineto import, where the
 * walkers' stores often miss, that was 2/3 of the hash's time and 10 % of a walk's. */
static uint64_t tail_word(const unsigned char *b, size_t n) {
    if (n >= 4)
        return load32(b) | load32(b + n - 4) << 8 * (n - 4);
    if (n)
        return (uint64_t)b[0] | (uint64_t)b[n / 2] << 8 * (n / 2) |
               (uint64_t)b[n - 1] << 8 * (n - 1);
    return 0;
}

uint64_t tp_hash_bytes(const void *p, size_t len, uint64_t seed) {
    const unsigned char *b = p;
    uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        h = tp_hash_mix64(h ^ load64(b + i)) * 0x2545f4914f6cdd1dULL;
    /* the last len - i bytes: the top of the word that ends the text when there is one */
    uint64_t tail = len >= 8 && i < len ? load64(b + len - 8) >> 8 * (8 - (len - i))
                                        : tail_word(b + i, len - i);
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
    /* the tail by whole loads, as tp_hash_bytes (the same word as copying its bytes into a
     * zeroed one, which stalled: 2.9 % of `report`'s CPU time on a 33 MB Kineto trace) */
    uint64_t tail = len >= 8 && i < len ? load64(b + len - 8) >> 8 * (8 - (len - i))
                                        : tail_word(b + i, len - i);
    return nonzero(tp_hash_mix64(h ^ tail ^ (uint64_t)(len - i) << 56));
}

uint64_t tp_hash_u64s(const uint64_t *w, size_t n, uint64_t seed) {
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    for (size_t i = 0; i < n; i++)
        h = tp_hash_mix64(h ^ w[i]) * 0x2545f4914f6cdd1dULL;
    return nonzero(tp_hash_mix64(h));
}
