/* tp_env_keys: the ENV keys and the recorded environment variables (see tp_env_keys.h). */
#include "tp_env_keys.h"

#include <string.h>

static const tp_env_key_info keys[] = {
#define TP_ENVK_ROW(id, key, label, per_gpu) {key, label, per_gpu},
    TP_ENV_KEY_TABLE(TP_ENVK_ROW)
#undef TP_ENVK_ROW
};

const tp_env_key_info *tp_env_key_get(tp_env_key k) {
    return &keys[k < TP_ENVK_COUNT ? k : 0];
}

/* {name, prefix}: prefix 1 matches every variable starting with `name`. What each changes:
 * device selection and ordering, synchronous launches, the caching allocator's behaviour
 * (expandable_segments, max_split_size_mb), CPU threads, NCCL's transport choices, cuDNN's
 * and cuBLAS's determinism, lazy module loading; and whether `record --pytorch` marked the
 * loop (the report then knows why a run has no steps). */
static const struct {
    const char *name;
    int prefix;
} vars[] = {
    {"CUDA_VISIBLE_DEVICES", 0}, {"CUDA_DEVICE_ORDER", 0},       {"CUDA_LAUNCH_BLOCKING", 0},
    {"CUDA_MODULE_LOADING", 0},  {"PYTORCH_CUDA_ALLOC_CONF", 0}, {"PYTORCH_ALLOC_CONF", 0},
    {"OMP_NUM_THREADS", 0},      {"CUBLAS_WORKSPACE_CONFIG", 0}, {"NCCL_", 1},
    {"TORCH_NCCL_", 1},          {"TRAINPROF_PYTORCH", 0},
};

int tp_env_var_wanted(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        size_t n = strlen(vars[i].name);
        if (vars[i].prefix ? len > n && !strncmp(name, vars[i].name, n)
                           : len == n && !strncmp(name, vars[i].name, n))
            return 1;
    }
    return 0;
}

int tp_env_superseded(const tp_reader *r, const tp_rec_hdr *h) {
    const tp_rec_hdr *const *v;
    size_t n = tp_reader_meta(r, TP_REC_ENV, &v), i = 0;
    const tp_rec_env *e = (const void *)h;
    while (i < n && v[i] != h)
        i++;
    for (i++; i < n; i++) {
        const tp_rec_env *o = (const void *)v[i];
        if (o->key_sid == e->key_sid && o->device == e->device)
            return 1;
    }
    return 0;
}
