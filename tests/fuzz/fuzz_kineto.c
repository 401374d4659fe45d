/* fuzz_kineto: fuzz target for the analyzer's loaders: input that looks like JSON or gzip
 * goes to the Kineto importer (tp_import_kineto_mem), anything else to the native .tprof
 * loader (tp_load_native_mem); then the model's finishing pass (sort, indexes, nesting)
 * runs over whatever was admitted.
 *
 * Built by tp_add_fuzz (tests/fuzz/CMakeLists.txt) as a plain driver over the seed corpus
 * (the importer's fixtures, tests/analyzer/data: valid traces of both generations and one
 * file per bad-input class; and the trace reader's .tprof seeds) and, with clang, as a libFuzzer
 * target. */
#include <stdint.h>
#include <stdlib.h>

#include "tp_import_kineto.h"
#include "tp_load_native.h"
#include "tp_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tp_model *m = tp_model_new();
    char err[512];
    tp_status st = tp_import_kineto_sniff(data, size)
                       ? tp_import_kineto_mem(m, "fuzz", data, size, err, sizeof err)
                       : tp_load_native_mem(m, "fuzz", data, size, err, sizeof err);
    /* a failed import leaves no rank behind and always explains itself */
    if (st != TP_OK && (m->n_ranks != 0 || err[0] == 0))
        abort();
    tp_model_finish(m);
    tp_model_close(m);
    return 0;
}
