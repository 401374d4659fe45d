/* bench_model_mem: loads traces as `trainprof report` does (tp_load_paths: any mix of .tprof
 * and Kineto JSON, files or folders) and prints where the finished model's bytes go
 * (tp_model_mem): per event column, per category, the indexes, memory events, strings, and
 * bytes per event; then the process's peak and current resident memory, which include the
 * loader's transient buffers and the blocks tp_model_finish keeps for the first view
 * (m->scratch, printed on their own: 20 B/event with two finish threads, 12 with one; the
 * view takes them over, so a report writes into those pages instead of fresh ones). Usage:
 * bench_model_mem PATH... (docs/PERFORMANCE.md, "Model memory"). */
#include <stdio.h>
#include <string.h>

#include "tp_load.h"
#include "tp_model_mem.h"

/* VmHWM / VmRSS of this process in kB, from /proc/self/status (0 when unreadable). */
static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            sscanf(line + n + 1, "%ld", &kb);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_model_mem TRACE...\n");
        return 2;
    }
    tp_model *m = NULL;
    tp_load_result res;
    if (tp_load_paths((const char *const *)argv + 1, (size_t)argc - 1, &m, &res) != TP_OK) {
        fprintf(stderr, "bench_model_mem: %s\n", res.error);
        return 1;
    }
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    tp_model_mem_print(&a, stdout);
    long hwm = status_kb("VmHWM"), rss = status_kb("VmRSS");
    printf("process peak RSS %ld kB (%.1f B/event), RSS after load %ld kB (%.1f B/event)\n", hwm,
           a.n_events ? hwm * 1024.0 / (double)a.n_events : 0.0, rss,
           a.n_events ? rss * 1024.0 / (double)a.n_events : 0.0);
    size_t kept = tp_scratch_kept(m->scratch);
    printf("of which the finish's scratch kept for the view %zu kB (%.1f B/event)\n", kept / 1024,
           a.n_events ? (double)kept / (double)a.n_events : 0.0);
    tp_model_close(m);
    return 0;
}
