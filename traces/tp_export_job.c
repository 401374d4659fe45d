/* tp_export_job: see tp_export_job.h. */
#include "tp_export_job.h"

#include "tp_record.h"

int64_t tp_export_trace_pid(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    return p.pid;
}

uint64_t tp_export_job_shift(const tp_export_job *j, size_t n, size_t k) {
    if (!j || !j->place)
        return 0;
    int64_t least = 0;
    for (size_t i = 0; i < n; i++)
        least = j->place[i].shift_ns < least ? j->place[i].shift_ns : least;
    return (uint64_t)(j->place[k].shift_ns - least);
}

int64_t tp_export_job_pid(const tp_export_job *j, tp_reader *const *r, size_t k,
                          const int64_t *taken) {
    int64_t pid = tp_export_trace_pid(r[k]);
    pid = pid ? pid : (int64_t)k + 1;
    for (size_t i = 0; j && i < k; i++)
        if (taken[i] == pid)
            return 0x40000000 + (int64_t)k;
    return pid;
}
