/* tp_sysinfo: machine facts from /proc and file names (see tp_sysinfo.h). No allocation, no
 * library loaded, no program run: the collector calls it inside training processes. */
#include "tp_sysinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *open_under(const char *root, const char *path) {
    char full[4096];
    snprintf(full, sizeof full, "%s%s", root ? root : "", path);
    return fopen(full, "re");
}

/* Copies `s` without its surrounding white space into `out`. */
static void copy_trimmed(char *out, size_t cap, const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

/* The value of a "key<spaces>: value" line when it starts with `key`; NULL otherwise. */
static const char *field(const char *line, const char *key) {
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0)
        return NULL;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == ':' ? p + 1 : NULL;
}

int tp_sysinfo_cpu(const char *root, char *model, size_t cap, int *cores) {
    FILE *f = open_under(root, "/proc/cpuinfo");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    model[0] = 0;
    while (fgets(line, sizeof line, f)) {
        const char *v;
        if (field(line, "processor"))
            n++;
        else if (!model[0] && (v = field(line, "model name")))
            copy_trimmed(model, cap, v);
    }
    fclose(f);
    *cores = n;
    return 0;
}

int tp_sysinfo_cpu_allowed(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    return CPU_COUNT(&set);
}

/* The smaller of two quotas, 0 standing for none. */
static double min_quota(double a, double b) {
    return b > 0 && (a == 0 || b < a) ? b : a;
}

/* The quota in CPUs that folder ROOT/sys/fs/cgroup/MOUNT/PATH (cut to its first `len` bytes)
 * sets, v2 or v1; 0 when none. */
static double quota_at(const char *root, const char *mount, const char *path, size_t len, int v2) {
    char file[4096];
    long long quota = -1, period = 0;
    FILE *f;
    snprintf(file, sizeof file, "/sys/fs/cgroup%s%.*s/%s", mount, (int)len, path,
             v2 ? "cpu.max" : "cpu.cfs_quota_us");
    if ((f = open_under(root, file)) != NULL) {
        char max[32];
        if (v2 && fscanf(f, "%31s %lld", max, &period) == 2 && strcmp(max, "max") != 0)
            quota = atoll(max);
        else if (!v2 && fscanf(f, "%lld", &quota) != 1)
            quota = -1;
        fclose(f);
    }
    if (!v2 && quota > 0) {
        snprintf(file, sizeof file, "/sys/fs/cgroup%s%.*s/cpu.cfs_period_us", mount, (int)len,
                 path);
        if ((f = open_under(root, file)) != NULL) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    return quota > 0 && period > 0 ? (double)quota / (double)period : 0;
}

/* The smallest quota of group `path` and its ancestors under one mount; 0 when none. A path
 * that is not under the mount (a container that sees its host's path for its own root group)
 * finds nothing until the walk reaches the mount's root, which is the group itself. */
static double quota_up(const char *root, const char *mount, const char *path, int v2) {
    double best = 0;
    for (size_t len = strlen(path);; len--) {
        while (len && path[len - 1] == '/') /* "/a/b/" and "/" read as "/a/b" and "" */
            len--;
        best = min_quota(best, quota_at(root, mount, path, len, v2));
        while (len && path[len - 1] != '/')
            len--;
        if (!len)
            break;
    }
    return best;
}

int tp_sysinfo_cpu_quota(const char *root, double *cpus) {
    FILE *f = open_under(root, "/proc/self/cgroup");
    if (!f)
        return -1;
    char line[4096];
    double best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = 0; /* "ID:CONTROLLERS:PATH" */
        const char *ctl = c1 + 1, *path = c2 + 1;
        double q = 0;
        if (!strcmp(line, "0") && !*ctl) { /* v2: one hierarchy */
            q = quota_up(root, "", path, 1);
        } else { /* v1: the hierarchy whose controllers hold "cpu" */
            int cpu = 0;
            for (const char *p = ctl; *p; p += strcspn(p, ","), p += *p == ',')
                cpu |= strcspn(p, ",") == 3 && !strncmp(p, "cpu", 3);
            if (cpu) {
                q = min_quota(quota_up(root, "/cpu", path, 0),
                              quota_up(root, "/cpu,cpuacct", path, 0));
            }
        }
        best = min_quota(best, q);
    }
    fclose(f);
    if (best <= 0)
        return -1;
    *cpus = best;
    return 0;
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ..." (the open kernel
 * module says "Open Kernel Module for x86_64  580.95.05  Release Build ..."): the first word
 * after "Module" made of digits and dots with at least one dot. */
static int dotted_word_after(const char *p, char *ver, size_t cap) {
    while (*p) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t\n");
        if (n && n < cap && strspn(p, "0123456789.") == n && memchr(p, '.', n)) {
            memcpy(ver, p, n);
            ver[n] = 0;
            return 0;
        }
        p += n;
    }
    return -1;
}

int tp_sysinfo_nvidia_driver(const char *root, char *ver, size_t cap) {
    FILE *f = open_under(root, "/proc/driver/nvidia/version");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Module");
        if (strstr(line, "NVRM") && p)
            found = dotted_word_after(p + 6, ver, cap);
    }
    fclose(f);
    return found;
}

static void read_gpu(const char *root, const char *bus, tp_sysinfo_gpu *g) {
    char path[512], line[512];
    snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", bus);
    memset(g, 0, sizeof *g);
    g->minor = -1;
    copy_trimmed(g->bus, sizeof g->bus, bus);
    FILE *f = open_under(root, path);
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        const char *v;
        if ((v = field(line, "Model")))
            copy_trimmed(g->model, sizeof g->model, v);
        else if ((v = field(line, "Bus Location")))
            copy_trimmed(g->bus, sizeof g->bus, v);
        else if ((v = field(line, "Device Minor")))
            g->minor = atoi(v);
    }
    fclose(f);
}

static int by_bus(const void *a, const void *b) {
    return strcmp(((const tp_sysinfo_gpu *)a)->bus, ((const tp_sysinfo_gpu *)b)->bus);
}

int tp_sysinfo_gpus(const char *root, tp_sysinfo_gpu *out, int cap) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/proc/driver/nvidia/gpus", root ? root : "");
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < cap && (e = readdir(d)))
        if (e->d_name[0] != '.')
            read_gpu(root, e->d_name, &out[n++]);
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, by_bus);
    return n;
}

void tp_sysinfo_so_version(const char *path, char *ver, size_t cap) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *p = strstr(base, ".so.");
    ver[0] = 0;
    if (p && isdigit((unsigned char)p[4]))
        copy_trimmed(ver, cap, p + 4);
}

void tp_sysinfo_cuda_version_str(int v, char *buf, size_t cap) {
    if (v <= 0)
        snprintf(buf, cap, "unknown");
    else
        snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

/* Newest first within each major. Sources: CUDA Toolkit release notes, tables 2 ("CUDA Toolkit
 * and Corresponding Driver Versions") and 3 (minor-version compatibility), Linux x86_64. */
static const tp_cuda_driver_req driver_reqs[] = {
    {13000, "580.65.06", "580.65.06"}, {12090, "525.60.13", "575.51.03"},
    {12080, "525.60.13", "570.26"},    {12060, "525.60.13", "560.28.03"},
    {12050, "525.60.13", "555.42.02"}, {12040, "525.60.13", "550.54.14"},
    {12030, "525.60.13", "545.23.06"}, {12020, "525.60.13", "535.54.03"},
    {12010, "525.60.13", "530.30.02"}, {12000, "525.60.13", "525.60.13"},
    {11080, "450.80.02", "520.61.05"}, {11010, "450.80.02", "455.23"},
    {11000, "450.36.06", "450.36.06"}, {10020, "440.33", "440.33"},
    {10010, "418.39", "418.39"},       {10000, "410.48", "410.48"},
};

const tp_cuda_driver_req *tp_sysinfo_driver_req(int cuda_version) {
    for (size_t i = 0; i < sizeof driver_reqs / sizeof driver_reqs[0]; i++) {
        const tp_cuda_driver_req *r = &driver_reqs[i];
        if (r->cuda <= cuda_version && r->cuda / 1000 == cuda_version / 1000)
            return r;
    }
    /* a newer major than the table knows: its newest row is the least it needs */
    return cuda_version > driver_reqs[0].cuda ? &driver_reqs[0] : NULL;
}

int tp_sysinfo_version_cmp(const char *a, const char *b) {
    for (;;) { /* each turn steps past at least one '.', so it ends */
        char *ea, *eb;
        unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (*ea != '.' && *eb != '.')
            return 0;
        a = *ea == '.' ? ea + 1 : ea;
        b = *eb == '.' ? eb + 1 : eb;
    }
}
