/* fuzz_merge: fuzz target for `trainprof merge`'s reader (tp_merge_add_json): any bytes as
 * a JSON report, then, when admitted, the cross-rank section judged and written (text or
 * JSON) from what was read, so impossible rows (negative times, NaN steps, huge ranks) are
 * fuzzed all the way to the findings. A refused input must explain itself and leave no rank
 * behind.
 *
 * Built by tp_add_fuzz (tests/fuzz/CMakeLists.txt) as a plain driver over corpus/merge (a
 * valid two-rank report, one file per refusal class, and what once broke the reader) and,
 * with clang, as a libFuzzer target. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json = malloc(size + 1);
    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = '\0';
    tp_merge *mg = tp_merge_open();
    char err[1024] = "";
    tp_status st = tp_merge_add_json(mg, "fuzz", json, err, sizeof err);
    if (st != TP_OK && (tp_merge_n_ranks(mg) != 0 || err[0] == 0))
        abort();
    /* the same report twice: every rank is a duplicate, refused whole */
    if (st == TP_OK &&
        (tp_merge_add_json(mg, "again", json, err, sizeof err) == TP_OK || err[0] == 0))
        abort();
    FILE *out = st == TP_OK ? fopen("/dev/null", "w") : NULL;
    if (out) {
        tp_merge_write(mg, out, (int)(size % 2));
        fclose(out);
    }
    tp_merge_close(mg);
    free(json);
    return 0;
}
