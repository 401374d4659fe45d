/* Plain driver for libFuzzer-style targets: runs LLVMFuzzerTestOneInput over every file
 * named on the command line, or every file in the directories named, so the test suite
 * replays seed corpora and past crashes without libFuzzer. Exit 0 when all ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_driver: cannot open %s\n", path);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    /* Exactly `n` bytes, so ASan catches a read one past the end. */
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (got == (size_t)n)
        LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return got == (size_t)n;
}

static int run_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int ok = 1;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            ok &= run_file(path);
            (*count)++;
        }
    }
    closedir(d);
    return ok;
}

int main(int argc, char **argv) {
    int count = 0, ok = 1;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_driver: %s: not found\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            ok &= run_dir(argv[i], &count);
        } else {
            ok &= run_file(argv[i]);
            count++;
        }
    }
    printf("fuzz_driver: %d inputs\n", count);
    return ok && count > 0 ? 0 : 1;
}
