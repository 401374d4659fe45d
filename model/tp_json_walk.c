/* tp_json_walk: the walker handle and the choice of code by CPU (see tp_json_walk.h). This
 * file is plain C compiled for the baseline, so the CPU check never runs AVX2 code itself. */
#include "tp_json_walk.h"

#include <stdlib.h>

/* tp_json_walk_simd.cpp */
void *tp_json_walk_simd_new(void);
void tp_json_walk_simd_free(void *parser);
const char *tp_json_walk_simd_impl(void);
int tp_json_walk_simd_run(void *parser, const char *text, size_t len, const tp_json_walk_cb *cb,
                          void *ctx);

struct tp_json_walk {
    void *parser; /* the shim's walker: stage 1's buffers and its string buffer */
};

/* The shim is built for haswell on x86-64 (tp_json_walk_simd.cpp): usable only with AVX2,
 * BMI1/2, PCLMUL and LZCNT. LZCNT is not asked (clang has no name for it): every CPU with
 * AVX2 and BMI has it (Intel since Haswell, AMD since K10). Elsewhere the shim is built for
 * the baseline and always usable. */
int tp_json_walk_usable(void) {
#if defined(__x86_64__) && defined(TP_JSON_WALK_HASWELL)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("pclmul");
#else
    return 1;
#endif
}

tp_json_walk *tp_json_walk_open(void) {
    if (!tp_json_walk_usable())
        return NULL;
    tp_json_walk *w = malloc(sizeof *w);
    if (!w || !(w->parser = tp_json_walk_simd_new()))
        abort();
    return w;
}

void tp_json_walk_close(tp_json_walk *w) {
    if (!w)
        return;
    tp_json_walk_simd_free(w->parser);
    free(w);
}

int tp_json_walk_elements(tp_json_walk *w, const char *text, size_t len, const tp_json_walk_cb *cb,
                          void *ctx) {
    return tp_json_walk_simd_run(w->parser, text, len, cb, ctx);
}

const char *tp_json_walk_impl(const tp_json_walk *w) {
    (void)w;
    return tp_json_walk_simd_impl();
}
