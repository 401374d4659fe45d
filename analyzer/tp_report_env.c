/* tp_report_env: the report's Environment section (text and JSON): where the rank ran (host,
 * CPU, driver, CUDA runtime, CUPTI, cuDNN, NCCL, Python, PyTorch, the recorded variables) and
 * one line per GPU, from the rank's environment facts (tp_an_env). A rank without facts
 * (traces before format 1.4, Kineto traces without metadata) has neither the text section nor
 * the JSON key. */
#include "tp_report_env.h"

#include <string.h>

#include "tp_an_env.h"
#include "tp_env_keys.h"
#include "tp_report_fmt.h"
#include "tp_text.h"

#define MAX_GPUS 64

void tp_report_env_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_model *m = rr->v.m;
    const tp_rank *r = rr->v.r;
    char line[1024], safe[1024];
    if (!r->n_env)
        return;
    fprintf(f, "Environment\n");
    for (int k = 0; k < TP_ENVK_COUNT; k++) {
        const tp_env_key_info *ki = tp_env_key_get((tp_env_key)k);
        const char *v = ki->per_gpu ? NULL : tp_rank_env(m, r, -1, ki->key);
        if (v)
            fprintf(f, "  %-24s %s\n", ki->label, tp_text_safe(safe, sizeof safe, v));
    }
    for (size_t i = 0; i < r->n_env; i++) {
        const char *k = tp_model_str(m, r->env[i].key);
        if (r->env[i].device < 0 && !strncmp(k, TP_ENV_VAR_PREFIX, strlen(TP_ENV_VAR_PREFIX))) {
            snprintf(line, sizeof line, "%s=%s", k + strlen(TP_ENV_VAR_PREFIX),
                     tp_model_str(m, r->env[i].value));
            fprintf(f, "  %-24s %s\n", "variable", tp_text_safe(safe, sizeof safe, line));
        }
    }
    int32_t gpus[MAX_GPUS];
    size_t n = tp_an_env_gpus(r, gpus, MAX_GPUS);
    for (size_t i = 0; i < n && i < MAX_GPUS; i++) {
        char label[32];
        snprintf(label, sizeof label, "GPU %d", (int)gpus[i]);
        fprintf(
            f, "  %-24s %s\n", label,
            tp_text_safe(safe, sizeof safe, tp_an_env_gpu_line(m, r, gpus[i], line, sizeof line)));
    }
    fprintf(f, "\n");
}

/* {"process": {key: value, ...}, "gpus": [{"device": 0, "gpu.name": ..., ...}]}: every fact
 * under the key the trace gives it. */
void tp_report_env_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_model *m = rr->v.m;
    const tp_rank *r = rr->v.r;
    if (!r->n_env)
        return;
    tp_rj_str(g, "environment");
    yajl_gen_map_open(g);
    tp_rj_str(g, "process");
    yajl_gen_map_open(g);
    for (size_t i = 0; i < r->n_env; i++)
        if (r->env[i].device < 0)
            tp_rj_kv(g, tp_model_str(m, r->env[i].key), tp_model_str(m, r->env[i].value));
    yajl_gen_map_close(g);
    tp_rj_str(g, "gpus");
    yajl_gen_array_open(g);
    int32_t gpus[MAX_GPUS];
    size_t n = tp_an_env_gpus(r, gpus, MAX_GPUS);
    for (size_t k = 0; k < n && k < MAX_GPUS; k++) {
        yajl_gen_map_open(g);
        tp_rj_int(g, "device", gpus[k]);
        for (size_t i = 0; i < r->n_env; i++)
            if (r->env[i].device == gpus[k])
                tp_rj_kv(g, tp_model_str(m, r->env[i].key), tp_model_str(m, r->env[i].value));
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}
