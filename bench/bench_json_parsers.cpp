/* bench_json_parsers: the JSON parsers the Kineto importer could use, lexing alone.
 *
 * For each plain JSON file (read into memory first) it times, alternating, best of N runs, the
 * three candidates with callbacks that only count tokens: yajl's streaming parser (numbers as
 * text, as the importer uses it), rapidjson's SAX Reader (kParseNumbersAsStringsFlag, in situ
 * off), and simdjson On-Demand walked token by token (tp_json_walk, the importer's walker).
 * Process CPU time; MB/s of JSON text. Ratios from one run on a shared machine.
 * usage: bench_json_parsers [-n RUNS] FILE.json... */
#include <rapidjson/reader.h>
#include <yajl/yajl_parse.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "tp_json_walk.h"

static double cpu_s() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned long long tokens;

static int c0(void *) {
    return ++tokens, 1;
}
static int cb(void *, int) {
    return ++tokens, 1;
}
static int cn(void *, const char *, size_t) {
    return ++tokens, 1;
}
static int cs(void *, const unsigned char *, size_t) {
    return ++tokens, 1;
}
static int cs2(void *, const unsigned char *, size_t) {
    return ++tokens, 1;
}

static double run_yajl(const std::vector<char> &t) {
    static const yajl_callbacks y = {c0, cb, nullptr, nullptr, cn, cs, c0, cs2, c0, c0, c0};
    double t0 = cpu_s();
    yajl_handle h = yajl_alloc(&y, nullptr, nullptr);
    int ok = yajl_parse(h, (const unsigned char *)t.data(), t.size() - TP_JSON_WALK_PADDING) ==
                 yajl_status_ok &&
             yajl_complete_parse(h) == yajl_status_ok;
    yajl_free(h);
    return ok ? cpu_s() - t0 : -1;
}

struct counter : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, counter> {
    bool Default() {
        return ++tokens, true;
    }
    bool RawNumber(const char *, rapidjson::SizeType, bool) {
        return ++tokens, true;
    }
    bool String(const char *, rapidjson::SizeType, bool) {
        return ++tokens, true;
    }
    bool Key(const char *, rapidjson::SizeType, bool) {
        return ++tokens, true;
    }
};

static double run_rapidjson(const std::vector<char> &t) {
    double t0 = cpu_s();
    rapidjson::Reader r;
    counter c;
    rapidjson::MemoryStream ms(t.data(), t.size() - TP_JSON_WALK_PADDING);
    int ok =
        !r.Parse<rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag>(ms,
                                                                                                c)
             .IsError();
    return ok ? cpu_s() - t0 : -1;
}

/* The walker takes an array's elements: the file is wrapped as [FILE]. */
static double run_simdjson(tp_json_walk *w, const std::vector<char> &wrapped) {
    static const tp_json_walk_cb k = {c0, cb, cn, cs, c0, cs2, c0, c0, c0, nullptr, nullptr};
    double t0 = cpu_s();
    int ok = tp_json_walk_elements(w, wrapped.data(), wrapped.size() - TP_JSON_WALK_PADDING, &k,
                                   nullptr);
    return ok ? cpu_s() - t0 : -1;
}

static bool slurp(const char *path, std::vector<char> &t, std::vector<char> &wrapped) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        t.insert(t.end(), buf, buf + k);
    fclose(f);
    wrapped.push_back('[');
    wrapped.insert(wrapped.end(), t.begin(), t.end());
    wrapped.push_back(']');
    t.resize(t.size() + TP_JSON_WALK_PADDING, ' ');
    wrapped.resize(wrapped.size() + TP_JSON_WALK_PADDING, ' ');
    return true;
}

int main(int argc, char **argv) {
    int runs = 3, i = 1;
    if (argc > 2 && !strcmp(argv[1], "-n"))
        runs = atoi(argv[2]), i = 3;
    tp_json_walk *w = tp_json_walk_open();
    printf("%-40s %9s %9s %9s %9s  (MB/s of CPU, best of %d; simdjson code: %s)\n", "file", "MB",
           "yajl", "rapidjson", "simdjson", runs, w ? tp_json_walk_impl(w) : "none");
    for (; i < argc; i++) {
        std::vector<char> t, wrapped;
        if (!slurp(argv[i], t, wrapped)) {
            fprintf(stderr, "bench_json_parsers: cannot read %s\n", argv[i]);
            return 1;
        }
        double best[3] = {1e9, 1e9, 1e9};
        for (int r = 0; r < runs; r++) {
            double s[3] = {run_yajl(t), run_rapidjson(t), w ? run_simdjson(w, wrapped) : -1};
            for (int k = 0; k < 3; k++)
                if (s[k] >= 0 && s[k] < best[k])
                    best[k] = s[k];
        }
        double mb = (double)(t.size() - TP_JSON_WALK_PADDING) / 1e6;
        const char *base = strrchr(argv[i], '/');
        printf("%-40.40s %9.1f", base ? base + 1 : argv[i], mb);
        for (int k = 0; k < 3; k++)
            printf(" %9.0f", best[k] < 1e9 ? mb / best[k] : 0.0);
        printf("\n");
    }
    tp_json_walk_close(w);
    return 0;
}
