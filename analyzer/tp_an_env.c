/* tp_an_env: readings of a rank's environment facts (see tp_an_env.h). */
#include "tp_an_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_env_keys.h"

size_t tp_an_env_gpus(const tp_rank *r, int32_t *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_env; i++) {
        int32_t d = r->env[i].device;
        size_t j = 0;
        if (d < 0)
            continue;
        while (j < n && j < cap && out[j] < d)
            j++;
        if (j < n && j < cap && out[j] == d)
            continue;
        if (j < cap) { /* insert, keeping the ones that still fit */
            size_t last = n < cap ? n : cap - 1;
            memmove(&out[j + 1], &out[j], (last - j) * sizeof *out);
            out[j] = d;
        }
        n++;
    }
    return n;
}

/* Appends ", PREFIXVALUEUNIT" (no comma first) to buf when `v` is known. */
static void add(char *buf, size_t n, const char *prefix, const char *v, const char *unit) {
    size_t len = strlen(buf);
    if (v && len + 2 < n)
        snprintf(buf + len, n - len, "%s%s%s%s", len ? ", " : "", prefix, v, unit);
}

const char *tp_an_env_gpu_line(const tp_model *m, const tp_rank *r, int32_t dev, char *buf,
                               size_t n) {
#define V(k) tp_rank_env(m, r, dev, tp_env_key_str(TP_ENVK_##k))
    char gib[32];
    const char *mem = V(GPU_MEMORY);
    if (mem)
        snprintf(gib, sizeof gib, "%.1f", strtod(mem, NULL) / (1u << 30));
    buf[0] = 0;
    add(buf, n, "", V(GPU_NAME), "");
    add(buf, n, "", V(GPU_SMS), " SMs");
    add(buf, n, "cc ", V(GPU_CC), "");
    add(buf, n, "", mem ? gib : NULL, " GiB");
    add(buf, n, "", V(GPU_CLOCK), " MHz");
    add(buf, n, "memory ", V(GPU_MEM_CLOCK), " MHz");
    add(buf, n, "PCI ", V(GPU_PCI), "");
    return buf;
#undef V
}

static const char *var(const tp_model *m, const tp_rank *r, const char *name) {
    char key[128];
    snprintf(key, sizeof key, TP_ENV_VAR_PREFIX "%s", name);
    return tp_rank_env(m, r, -1, key);
}

int tp_an_env_launch_blocking(const tp_model *m, const tp_rank *r) {
    const char *v = var(m, r, "CUDA_LAUNCH_BLOCKING");
    return v && atoi(v) != 0;
}

/* "expandable_segments:True" among the comma-separated options (the allocator accepts True
 * and true); a later option of the same name wins, as in PyTorch's parser. */
static int expandable_in(const char *conf) {
    int on = 0;
    for (const char *p = conf; p && (p = strstr(p, "expandable_segments")); p++) {
        const char *v = p + strlen("expandable_segments");
        while (*v == ' ')
            v++;
        if (*v == ':')
            on = !strncmp(v + 1, "True", 4) || !strncmp(v + 1, "true", 4);
    }
    return on;
}

int tp_an_env_expandable_segments(const tp_model *m, const tp_rank *r) {
    return expandable_in(var(m, r, "PYTORCH_CUDA_ALLOC_CONF")) ||
           expandable_in(var(m, r, "PYTORCH_ALLOC_CONF"));
}

int tp_an_env_cpus(const tp_model *m, const tp_rank *r, double *cpus, const char **what) {
    static const struct {
        tp_env_key key;
        const char *what;
    } bounds[] = {{TP_ENVK_CPU_CORES, "cores"},
                  {TP_ENVK_CPU_ALLOWED, "allowed to the process"},
                  {TP_ENVK_CPU_QUOTA, "its cgroup's quota"}};
    double best = 0;
    const char *by = NULL;
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const char *v = tp_rank_env(m, r, -1, tp_env_key_str(bounds[i].key));
        double x = v ? strtod(v, NULL) : 0;
        if (!i && x <= 0)
            return -1; /* no cores known: the rest bounds nothing known */
        if (x > 0 && (best == 0 || x < best))
            best = x, by = bounds[i].what;
    }
    *cpus = best;
    if (what)
        *what = by;
    return 0;
}

int tp_an_env_samples_native(const tp_model *m, const tp_rank *r) {
    const char *v = tp_rank_env(m, r, -1, tp_env_key_str(TP_ENVK_SAMPLED));
    return v && strstr(v, "native") != NULL;
}
