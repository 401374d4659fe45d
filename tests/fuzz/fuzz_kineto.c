/* fuzz_kineto: fuzz target for the analyzer's loaders: input that looks like JSON or gzip
 * goes to the Kineto importer (tp_import_kineto_mem), anything else to the native .tprof
 * loader (tp_load_native_mem); then the model's finishing pass (sort, indexes, nesting)
 * runs over whatever was admitted (and the split parse of tp_import_kineto_mem_split must
 * agree with the serial one: status, error line, counts; and so must yajl alone and the
 * simdjson walk in pieces of a few bytes, tp_import_kineto_mem_parser), and the report (text or
 * JSON) (every analysis and the diagnosis) over the model, so impossible values are fuzzed all the
 * way to the figures.
 *
 * Built by tp_add_fuzz (tests/fuzz/CMakeLists.txt) as a plain driver over the seed corpus
 * (the importer's fixtures, tests/analyzer/data: valid traces of both generations and one
 * file per bad-input class; and the trace reader's .tprof seeds) and, with clang, as a libFuzzer
 * target. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_import_kineto.h"
#include "tp_load_native.h"
#include "tp_model.h"
#include "tp_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when importing with tp_import_kineto_mem_parser(walker, piece) gives status `st`, error
 * `err` and the rows, memory events and JSON event count of `m`. */
static int same_import(const tp_model *m, tp_status st, const char *err, const uint8_t *data,
                       size_t size, int walker, size_t piece) {
    tp_model *o = tp_model_new();
    char e[512];
    tp_status s =
        tp_import_kineto_mem_parser(o, "fuzz", data, size, walker, piece, NULL, e, sizeof e);
    int same = s == st && (st == TP_OK || !strcmp(e, err)) && o->n_ranks == m->n_ranks &&
               (st != TP_OK ||
                (o->ranks[0].ev.n == m->ranks[0].ev.n && o->ranks[0].mem.n == m->ranks[0].mem.n &&
                 o->ranks[0].n_json_events == m->ranks[0].n_json_events &&
                 (!o->ranks[0].ev.n || !memcmp(o->ranks[0].ev.name, m->ranks[0].ev.name,
                                               o->ranks[0].ev.n * sizeof *o->ranks[0].ev.name))));
    tp_model_close(o);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tp_model *m = tp_model_new();
    char err[512];
    tp_status st = tp_import_kineto_sniff(data, size)
                       ? tp_import_kineto_mem(m, "fuzz", data, size, err, sizeof err)
                       : tp_load_native_mem(m, "fuzz", data, size, err, sizeof err);
    /* a failed import leaves no rank behind and always explains itself */
    if (st != TP_OK && (m->n_ranks != 0 || err[0] == 0))
        abort();
    if (tp_import_kineto_sniff(data, size)) { /* the split parse (two threads) says the same */
        tp_model *s = tp_model_new();
        char err2[512];
        tp_status st2 =
            tp_import_kineto_mem_split(s, "fuzz", data, size, 0, NULL, err2, sizeof err2);
        if (st2 != st || (st != TP_OK && strcmp(err, err2)) || s->n_ranks != m->n_ranks ||
            (st == TP_OK &&
             (s->ranks[0].ev.n != m->ranks[0].ev.n || s->ranks[0].mem.n != m->ranks[0].mem.n ||
              s->ranks[0].n_json_events != m->ranks[0].n_json_events)))
            abort();
        tp_model_close(s);
    }
    if (tp_import_kineto_sniff(data, size)) /* yajl alone, and simdjson in tiny pieces */
        for (int walker = 0; walker < 2; walker++)
            if (!same_import(m, st, err, data, size, walker, size % 97 + 1))
                abort();
    tp_model_finish(m);
    FILE *out = m->n_ranks ? fopen("/dev/null", "w") : NULL;
    if (out) {
        tp_report_opts o;
        tp_report_opts_init(&o);
        o.format = size % 2 ? TP_REPORT_JSON : TP_REPORT_TEXT; /* both, half the cost */
        o.an.no_symbols = 1; /* symbolization reads files named by the input: not here */
        tp_report_write(out, m, &o);
        fclose(out);
    }
    tp_model_close(m);
    return 0;
}
