/* The collector's CPython layout table against the headers of every CPython installed here:
 * scripts/pyframes-layout.c is compiled (headers only) against each one's include directory
 * and must print exactly what tp_pyframes_layout_format says for that minor version. Also:
 * versions outside 3.8-3.14 have no layout. Skips (77) when no CPython headers are found.
 * usage: test_pyframes_layout CC pyframes-layout.c */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_pyframes.h"
#include "tp_test.h"

static const char *g_cc, *g_gen;
static int g_compared;

/* Compiles the generator against `inc` and runs it; its one line in `out`. 0 on failure. */
static int generate(const char *inc, char *out, size_t n) {
    char bin[] = "/tmp/tp-pylayout-XXXXXX", cmd[4096];
    int fd = mkstemp(bin);
    if (fd < 0)
        return 0;
    close(fd);
    snprintf(cmd, sizeof cmd, "%s -DPy_BUILD_CORE -I'%s' '%s' -o %s 2>/dev/null && %s", g_cc, inc,
             g_gen, bin, bin);
    FILE *p = popen(cmd, "r");
    int ok = p && fgets(out, (int)n, p) != NULL;
    if (p)
        ok = pclose(p) == 0 && ok;
    unlink(bin);
    out[strcspn(out, "\n")] = 0;
    return ok;
}

static void compare(const char *inc) {
    char got[2048] = "", want[2048] = "";
    unsigned minor = 0;
    const char *v = strstr(inc, "python3.");
    if (!v || sscanf(v, "python3.%u", &minor) != 1 || minor < 8)
        return; /* older versions: no layout (checked below) */
    if (!generate(inc, got, sizeof got)) {
        fprintf(stderr, "%s: cannot compile the generator (no internal headers?)\n", inc);
        return;
    }
    CHECK(tp_pyframes_layout_format(minor, want, sizeof want));
    if (strcmp(got, want))
        fprintf(stderr, "%s:\n  headers:   %s\n  collector: %s\n", inc, got, want);
    CHECK_STR(got, want);
    printf("%s: ok\n", inc);
    g_compared++;
}

static void test_installed(void) {
    const char *pats[] = {"/root/.pyenv/versions/3*/include/python3.*", "/usr/include/python3.*",
                          "/usr/local/include/python3.*"};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        glob_t g;
        if (glob(pats[i], 0, NULL, &g) == 0)
            for (size_t k = 0; k < g.gl_pathc; k++)
                compare(g.gl_pathv[k]);
        globfree(&g);
    }
}

static void test_supported_range(void) {
    char buf[2048];
    CHECK(!tp_pyframes_layout_format(7, buf, sizeof buf));
    CHECK(!tp_pyframes_layout_format(15, buf, sizeof buf));
    for (unsigned m = 8; m <= 14; m++)
        CHECK(tp_pyframes_layout_format(m, buf, sizeof buf));
    CHECK(strstr(buf, "python 3.14: ") == buf);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_pyframes_layout CC pyframes-layout.c\n");
        return 2;
    }
    g_cc = argv[1], g_gen = argv[2];
    TP_RUN(test_supported_range);
    TP_RUN(test_installed);
    if (!tp_test_failures && !g_compared) {
        printf("no CPython headers found: nothing compared\n");
        return 77;
    }
    return tp_test_summary();
}
