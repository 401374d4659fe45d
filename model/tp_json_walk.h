/* tp_json_walk: the elements of a JSON array walked over simdjson's stage 1 (its SIMD index
 * of the text's structural characters), each token handed to callbacks shaped like yajl's (the
 * Kineto importer's yajl callbacks serve both parsers unchanged).
 *
 * A C API over a thin C++ shim (tp_json_walk_simd.cpp), used only by the Kineto importer. The
 * walk validates what it hands on as yajl does (structure, strings, UTF-8, number grammar)
 * and stops at the first error or at the first callback that returns 0; it never says where
 * or why: the importer then reads the same text with yajl, which words the error. On x86-64
 * the shim is built for haswell (AVX2) and a CPU without it gets no walker (the importer then
 * uses yajl alone). */
#ifndef TP_JSON_WALK_H
#define TP_JSON_WALK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every callback gets the walk's ctx and returns 1 to go on, 0 to stop the walk; map_key may
 * also return 2: go on, but the value of that key is only validated, none of its tokens
 * handed on (the caller would ignore them all). Numbers come as their JSON text, and for the
 * two common shapes (on_integer, on_milli, when set) with their value too, read as the
 * grammar is checked; strings and keys unescaped (not NUL-ended). The texts handed on (numbers,
 * strings, keys) stay valid and unchanged until tp_json_walk_elements returns. */
typedef struct {
    int (*on_null)(void *ctx);
    int (*on_bool)(void *ctx, int v);
    int (*on_number)(void *ctx, const char *s, size_t n);
    int (*on_string)(void *ctx, const unsigned char *s, size_t n);
    int (*start_map)(void *ctx);
    int (*map_key)(void *ctx, const unsigned char *s, size_t n);
    int (*end_map)(void *ctx);
    int (*start_array)(void *ctx);
    int (*end_array)(void *ctx);
    /* Optional (NULL: on_number): a number that is an integer of at most 18 digits, no
     * fraction or exponent ("-0" too), with its text and its value. */
    int (*on_integer)(void *ctx, const char *s, size_t n, int64_t v);
    /* Optional (NULL: on_number): a number of at most 15 digits, a point and 1-3 digits, no
     * exponent ("1669783687464.181", "-0.5"), with its text and its value times 1000 (exact). */
    int (*on_milli)(void *ctx, const char *s, size_t n, int64_t milli);
} tp_json_walk_cb;

/* Extra bytes the walker may read past a text's end (their values do not matter). */
#define TP_JSON_WALK_PADDING 64

typedef struct tp_json_walk tp_json_walk;

/* 1 when this CPU can run the walker (always, except x86-64 without AVX2/BMI/PCLMUL/LZCNT). */
int tp_json_walk_usable(void);

/* A walker with its parser buffers (grown to the largest text walked); NULL when
 * tp_json_walk_usable() says no. Aborts on out-of-memory (an analyzer-side module). */
tp_json_walk *tp_json_walk_open(void);

/* NULL is a no-op. */
void tp_json_walk_close(tp_json_walk *w);

/* Walks text[0..len), which must be one JSON array, calling cb for the tokens of each of its
 * elements (not for the array itself); text[len..len+TP_JSON_WALK_PADDING) must be readable.
 * Returns 1 when the whole text was one valid array and every callback returned 1; 0
 * otherwise (invalid JSON, trailing content, a callback's 0). */
int tp_json_walk_elements(tp_json_walk *w, const char *text, size_t len, const tp_json_walk_cb *cb,
                          void *ctx);

/* The name of the simdjson code the walker uses ("haswell", "arm64", ...: bench, docs). */
const char *tp_json_walk_impl(const tp_json_walk *w);

#ifdef __cplusplus
}
#endif

#endif
