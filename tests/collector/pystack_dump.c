/* pystack_dump: prints the stack of every NVTX push and start of a trace, and of every SAMPLE,
 * frame by frame, for test_collector_pyframes.py and test_collector_sampler.py:
 *   PUSH <name> tid=<tid> frames=<n>
 *   SAMPLE tid=<tid> on_cpu=<0|1> gil=<0|1> cpu_ns=<n> period_ns=<n> frames=<n>
 *     py <function> <file>:<line>          a Python frame (PYCODE record resolved)
 *     native <module file name>+0x<offset> a native frame ("?" without a module)
 * usage: pystack_dump TRACE */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tp_reader.h"

static const char *base_name(const char *path) {
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "?";
}

static void print_frame(const tp_reader *r, uint64_t f) {
    if (TP_FRAME_IS_PYTHON(f)) {
        const tp_rec_pycode *c = tp_reader_pycode(r, TP_FRAME_PY_CODE(f));
        const char *name = c ? tp_reader_string(r, c->name_sid) : NULL;
        const char *file = c ? tp_reader_string(r, c->file_sid) : NULL;
        printf("  py %s %s:%" PRIu32 "\n", name ? name : "?", file ? file : "?",
               (uint32_t)TP_FRAME_PY_LINE(f));
        return;
    }
    const tp_rec_module *m = tp_reader_module(r, TP_FRAME_MODULE(f));
    printf("  native %s+0x%" PRIx64 "\n", base_name(m ? tp_reader_string(r, m->path_sid) : NULL),
           (uint64_t)TP_FRAME_OFFSET(f));
}

int main(int argc, char **argv) {
    tp_reader *r;
    tp_cursor *c;
    if (argc != 2 || tp_reader_open(argv[1], &r) != TP_OK) {
        fprintf(stderr, "usage: pystack_dump TRACE\n");
        return 2;
    }
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH) | TP_REC_BIT(TP_REC_NVTX_START) |
                      TP_REC_BIT(TP_REC_SAMPLE),
                  0, 0};
    if (tp_cursor_open(r, &q, &c) != TP_OK)
        return 1;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        uint32_t tid, msg, stack, n = 0;
        if (h->type == TP_REC_SAMPLE) {
            tp_rec_sample s;
            tp_record_get(h, &s, sizeof s);
            const uint64_t *fr = tp_reader_stack(r, s.stack_id, &n);
            printf("SAMPLE tid=%" PRIu32 " on_cpu=%d gil=%d cpu_ns=%" PRIu64 " period_ns=%" PRIu64
                   " frames=%" PRIu32 "\n",
                   s.tid, (h->flags & TP_SAMPLE_ON_CPU) != 0, (h->flags & TP_SAMPLE_HOLDS_GIL) != 0,
                   s.cpu_ns, s.period_ns, n);
            for (uint32_t i = 0; i < n; i++)
                print_frame(r, fr[i]);
            continue;
        }
        if (h->type == TP_REC_NVTX_PUSH) {
            tp_rec_nvtx p;
            tp_record_get(h, &p, sizeof p);
            tid = p.tid, msg = p.msg_sid, stack = p.stack_id;
        } else {
            tp_rec_nvtx_start s;
            tp_record_get(h, &s, sizeof s);
            tid = s.tid, msg = s.msg_sid, stack = s.stack_id;
        }
        const uint64_t *fr = tp_reader_stack(r, stack, &n);
        const char *name = tp_reader_string(r, msg);
        printf("PUSH %s tid=%" PRIu32 " frames=%" PRIu32 "\n", name ? name : "?", tid, n);
        for (uint32_t i = 0; i < n; i++)
            print_frame(r, fr[i]);
    }
    tp_cursor_close(c);
    tp_reader_close(r);
    return 0;
}
