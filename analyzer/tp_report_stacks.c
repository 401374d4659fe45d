/* tp_report_stacks: GPU time by launching stack in the report (see the header). The section
 * reads the launching stacks the analyses computed (TP_RA_STACKS) or runs tp_an_stacks on the
 * rank's view, the same call the TUI's Stacks view makes. */
#include "tp_report_stacks.h"

#include <string.h>

#include "tp_an_stacks.h"
#include "tp_report_fmt.h"
#include "tp_text.h"
#include "tp_units.h"

#define TEXT_KERNELS 3 /* kernel names shown per group in text; the JSON has them all */
#define INDENT 39      /* where a group's frames start: after "  #  GPU time  share  ops  " */

static void text_kernels(FILE *f, const tp_an_stack_row *s, const tp_model *m) {
    char nb[128], tb[32];
    fprintf(f, "%*s-> ", INDENT, "");
    for (size_t k = 0; k < s->n_k && k < TEXT_KERNELS; k++)
        fprintf(f, "%s%s x%zu %s", k ? ", " : "",
                tp_rf_clip(nb, sizeof nb, tp_model_str(m, s->k[k].name), 48), s->k[k].count,
                tp_units_dur(tb, sizeof tb, (double)s->k[k].gpu_ns));
    if (s->n_k > TEXT_KERNELS)
        fprintf(f, ", +%zu more", s->n_k - TEXT_KERNELS);
    fputc('\n', f);
}

static void text_group(FILE *f, size_t i, const tp_an_stack_row *s, const tp_an_stacks *st,
                       const tp_model *m) {
    char tb[32], pb[32], label[1024], gap[64];
    for (size_t k = 0; k < s->n_frames; k++) {
        tp_an_frame_label(&s->frames[k], label, sizeof label);
        if (k == 0)
            fprintf(f, "  %3zu %s %9s %8zu  ", i + 1, tp_rf_time(tb, sizeof tb, (double)s->gpu_ns),
                    tp_rf_pct_str(pb, sizeof pb, tp_rf_pct(s->gpu_ns, st->gpu_ns)), s->count);
        else if (s->frames[k].skipped)
            fprintf(f, "%*s%s\n%*s", INDENT, "", tp_an_frame_gap(&s->frames[k], gap, sizeof gap),
                    INDENT, "");
        else
            fprintf(f, "%*s", INDENT, "");
        tp_text_fputs(label, f);
        fputc('\n', f);
    }
    text_kernels(f, s, m);
}

const tp_an_stacks *tp_report_stacks_of(const tp_rank_analysis *rr, const tp_report_opts *o,
                                        tp_an_stacks *own) {
    memset(own, 0, sizeof *own);
    if (rr->ran & TP_RA_STACKS)
        return &rr->st;
    tp_an_stacks_run(&rr->v, o->an.stack_depth, own);
    return own;
}

void tp_report_stacks_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    tp_an_stacks own;
    const tp_an_stacks *sp = tp_report_stacks_of(rr, o, &own);
    if (sp->n) {
        char tb[32];
        size_t top = (size_t)(o->top > 0 ? o->top : 10);
        fprintf(f,
                "GPU time by launching stack (up to %d frames, innermost first: a Python program's "
                "call, then its own line and callers; --stack-depth N)\n",
                sp->depth);
        fprintf(f, "  %3s %12s %9s %8s  %s\n", "#", "GPU time", "share", "ops", "stack -> kernels");
        for (size_t i = 0; i < sp->n && i < top; i++)
            text_group(f, i, &sp->s[i], sp, rr->v.m);
        if (sp->n > top)
            fprintf(f, "  ... %zu more stacks (trainprof report --top N, or --format json)\n",
                    sp->n - top);
        if (sp->no_stack)
            fprintf(f, "  without a stack: %zu ops, %s\n", sp->no_stack,
                    tp_units_dur(tb, sizeof tb, (double)sp->no_stack_ns));
        fprintf(f, "\n");
    }
    tp_an_stacks_free(&own);
}

static void json_frame(yajl_gen g, const tp_an_frame *fr) {
    char label[1024];
    yajl_gen_map_open(g);
    tp_rj_kv(g, "label", tp_an_frame_label(fr, label, sizeof label));
    tp_rj_kv(g, "function", fr->func);
    tp_rj_kv(g, "file", fr->file);
    tp_rj_int(g, "line", fr->line);
    tp_rj_kv(g, "module", fr->module);
    tp_rj_int(g, "offset", (long long)fr->offset);
    tp_rj_str(g, "python");
    yajl_gen_bool(g, fr->python);
    tp_rj_str(g, "inlined");
    yajl_gen_bool(g, fr->inlined);
    tp_rj_str(g, "library");
    yajl_gen_bool(g, fr->library);
    tp_rj_int(g, "skipped", fr->skipped);
    tp_rj_kv(g, "symbols", fr->symbols);
    yajl_gen_map_close(g);
}

void tp_report_stacks_json_frames(yajl_gen g, uint32_t stack, const tp_an_frame *f, size_t n) {
    tp_rj_int(g, "stack_id", stack);
    tp_rj_str(g, "frames");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < n; k++)
        json_frame(g, &f[k]);
    yajl_gen_array_close(g);
}

static void json_group(yajl_gen g, const tp_an_stack_row *s, const tp_an_stacks *st,
                       const tp_model *m) {
    yajl_gen_map_open(g);
    tp_rj_int(g, "gpu_ns", s->gpu_ns);
    tp_rj_num(g, "pct", tp_rf_pct(s->gpu_ns, st->gpu_ns));
    tp_rj_int(g, "count", (long long)s->count);
    tp_report_stacks_json_frames(g, s->stack, s->frames, s->n_frames);
    tp_rj_str(g, "kernels");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < s->n_k; k++) {
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", tp_model_str(m, s->k[k].name));
        tp_rj_int(g, "count", (long long)s->k[k].count);
        tp_rj_int(g, "gpu_ns", s->k[k].gpu_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}

void tp_report_stacks_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    tp_an_stacks own;
    const tp_an_stacks *sp = tp_report_stacks_of(rr, o, &own);
    tp_rj_str(g, "launch_stacks");
    yajl_gen_map_open(g);
    tp_rj_int(g, "depth", sp->depth);
    tp_rj_int(g, "n_ops", (long long)sp->n_ops);
    tp_rj_int(g, "gpu_ns", sp->gpu_ns);
    tp_rj_int(g, "no_stack_ops", (long long)sp->no_stack);
    tp_rj_int(g, "no_stack_gpu_ns", sp->no_stack_ns);
    tp_rj_str(g, "stacks");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < sp->n; i++)
        json_group(g, &sp->s[i], sp, rr->v.m);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
    tp_an_stacks_free(&own);
}
