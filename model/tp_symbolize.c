/* tp_symbolize: libdwfl offline reporting, one Dwfl session per module file.
 *
 * One session per module (rather than all modules in one) keeps each module's address
 * arithmetic trivial: libdwfl places an offline ET_DYN file at some base of its choosing, and
 * with one module per session that base is simply the module's bias. Results are cached in
 * an open-addressing table keyed by (module index, vaddr); strings are copied out of libdw so
 * that a result never points into a mapping that could go away. */
#include "tp_symbolize.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tp_demangle.h"
#include "tp_hash.h"
#include "tp_mem.h"

/* A compile unit's top-level DIEs that cover code, in DIE order, with their ranges: the
 * first walk of a CU reads them once (dwarf_getscopes walked every top-level DIE, parsing
 * through each one's children, at every address; on a trainer with large CUs that was ~1 M
 * instructions an address). */
typedef struct {
    Dwarf_Addr lo, hi; /* [lo, hi) */
    uint32_t die;      /* index into tops */
} cu_range;

typedef struct {
    Dwarf_Off off; /* the CU DIE's offset */
    int imports;   /* has DW_TAG_imported_unit children: left to dwarf_getscopes */
    Dwarf_Die *tops;
    size_t n_tops;
    cu_range *ranges; /* in DIE order, each DIE's ranges in its own order */
    size_t n_ranges;
} cu_index;

typedef struct {
    char *path;
    uint8_t build_id[32];
    size_t build_id_len;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    tp_sym_status status;
    cu_index *cus; /* the CUs looked up so far */
    size_t n_cus, cap_cus;
} sym_module;

/* One address's results, each found on first ask: its frames (tp_symbolize), its symbol's
 * name (tp_symbolize_func: libdwfl's look-up scans the module's whole symbol table, ~140 k
 * instructions a call on the trainer, and the report asks the same addresses again). */
typedef struct {
    uint32_t mod; /* index + 1; 0: empty slot */
    uint64_t vaddr;
    tp_sym *sym;      /* NULL: not resolved yet */
    const char *func; /* with has_func */
    int has_func;
} sym_slot;

struct tp_symbolizer {
    sym_module *mods;
    size_t n_mods, cap_mods;
    sym_slot *slots; /* power-of-two table */
    size_t n_slots, n_used, n_resolved;
    char **strs; /* every string handed out, freed at close */
    size_t n_strs, cap_strs;
    tp_sym failed[TP_SYM_NO_SYMBOL + 1]; /* shared results for each failure status */
    size_t n_lookups;
};

void tp_symbolizer_get_stats(const tp_symbolizer *s, tp_symbolizer_stats *out) {
    *out = (tp_symbolizer_stats){0, 0, 0};
    if (s)
        *out = (tp_symbolizer_stats){s->n_mods, s->n_resolved, s->n_lookups};
}

const char *tp_sym_status_str(tp_sym_status s) {
    switch (s) {
#define TP_SYM_CASE(name, text)                                                                    \
    case name:                                                                                     \
        return text;
        TP_SYM_STATUS_TABLE(TP_SYM_CASE)
#undef TP_SYM_CASE
    }
    return "unknown";
}

tp_status tp_symbolizer_open(tp_symbolizer **out) {
    tp_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return TP_ERR_NOMEM;
    for (int i = 0; i <= TP_SYM_NO_SYMBOL; i++)
        s->failed[i].status = (tp_sym_status)i;
    *out = s;
    return TP_OK;
}

void tp_symbolizer_close(tp_symbolizer *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n_mods; i++) {
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        for (size_t c = 0; c < s->mods[i].n_cus; c++)
            free(s->mods[i].cus[c].tops), free(s->mods[i].cus[c].ranges);
        free(s->mods[i].cus);
        free(s->mods[i].path);
    }
    for (size_t i = 0; i < s->n_slots; i++)
        free(s->slots[i].sym);
    for (size_t i = 0; i < s->n_strs; i++)
        free(s->strs[i]);
    free(s->mods);
    free(s->slots);
    free(s->strs);
    free(s);
}

static const char *keep_str(tp_symbolizer *s, const char *str) {
    if (!str)
        return NULL;
    TP_MEM_XGROW(s->strs, s->cap_strs, s->n_strs + 1); /* the analyzer aborts on OOM */
    char *c = strdup(str);
    if (!c)
        abort();
    return s->strs[s->n_strs++] = c;
}

/* A function's name as people read it: a C++ linkage name demangled (tp_demangle), any other
 * name kept as it is. */
static const char *keep_func(tp_symbolizer *s, const char *name) {
    char *d = tp_demangle(name);
    const char *k = keep_str(s, d ? d : name);
    free(d);
    return k;
}

/* ---------------------------------------------------------------- modules */

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo, /* debuglink and .build-id/xx/rest.debug */
    .section_address = dwfl_offline_section_address,
};

/* 1 when the file's build-id is the recorded one (or none was recorded). */
static int build_id_matches(Dwfl_Module *mod, const uint8_t *want, size_t n) {
    if (!n)
        return 1;
    const unsigned char *bits;
    GElf_Addr at;
    int len = dwfl_module_build_id(mod, &bits, &at);
    return len > 0 && (size_t)len == n && memcmp(bits, want, n) == 0;
}

static void module_load(sym_module *m) {
    struct stat st;
    if (stat(m->path, &st) != 0 || !S_ISREG(st.st_mode)) {
        m->status = TP_SYM_NO_FILE;
        return;
    }
    m->status = TP_SYM_NOT_ELF;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (!m->dwfl)
        return;
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_offline(m->dwfl, m->path, m->path, -1);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod || !dwfl_module_getelf(m->mod, &m->bias))
        return;
    m->status =
        build_id_matches(m->mod, m->build_id, m->build_id_len) ? TP_SYM_OK : TP_SYM_MISMATCH;
}

/* The module for (path, build_id), opened on first use; returns its index. */
static size_t module_get(tp_symbolizer *s, const char *path, const uint8_t *bid, size_t n) {
    if (!bid)
        n = 0;
    if (n > sizeof s->mods[0].build_id)
        n = sizeof s->mods[0].build_id;
    for (size_t i = 0; i < s->n_mods; i++)
        if (s->mods[i].build_id_len == n && (!n || !memcmp(s->mods[i].build_id, bid, n)) &&
            !strcmp(s->mods[i].path, path))
            return i;
    TP_MEM_XGROW(s->mods, s->cap_mods, s->n_mods + 1);
    sym_module *m = &s->mods[s->n_mods];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    if (!m->path)
        abort();
    if (n)
        memcpy(m->build_id, bid, n);
    m->build_id_len = n;
    module_load(m);
    return s->n_mods++;
}

tp_sym_status tp_symbolizer_module_status(tp_symbolizer *s, const char *path,
                                          const uint8_t *build_id, size_t build_id_len) {
    if (!s || !path)
        return TP_SYM_NO_FILE;
    size_t i = module_get(s, path, build_id, build_id_len); /* may move s->mods */
    return s->mods[i].status;
}

/* ---------------------------------------------------------------- one address */

/* Linkage name when the DIE (or its abstract origin) has one, else its plain name. */
static const char *die_name(Dwarf_Die *die) {
    Dwarf_Attribute a;
    const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    return n ? n : dwarf_diename(die);
}

/* Where an inlined_subroutine DIE was called from (file of the CU's line table, line). */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line) {
    Dwarf_Attribute a;
    Dwarf_Word idx, ln;
    Dwarf_Files *files;
    size_t nf;
    *file = NULL, *line = 0;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &idx) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nf) == 0 && idx < nf)
        *file = dwarf_filesrc(files, idx, NULL, NULL);
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &ln) == 0 && ln <= 0x7fffffff)
        *line = (int)ln;
}

static void push_frame(tp_symbolizer *s, tp_sym *out, const char *func, const char *file,
                       int line) {
    if (out->n == TP_SYM_MAX_INLINE) /* keep the owner: overwrite the outermost kept */
        out->n--;
    out->f[out->n].func = keep_func(s, func ? func : "??");
    out->f[out->n].file = keep_str(s, file);
    out->f[out->n].line = line;
    out->n++;
}

/* ---------------------------------------------------------------- scopes
 *
 * The DIE chain of an address as dwarf_getscopes + dwarf_getscopes_die find it: from the CU
 * down, the first child (in DIE order) whose ranges hold the address, to the deepest such
 * DIE; the innermost inlined_subroutine or subprogram on that path, then its ancestors. The
 * CU's top level comes from its index, the rest is walked as libdw walks it (dwarf_haspc on
 * each child in order). */

/* Moves d to its next sibling; 0 at the last one. */
static int next_sibling(Dwarf_Die *d) {
    Dwarf_Die nx;
    if (dwarf_siblingof(d, &nx) != 0)
        return 0;
    *d = nx;
    return 1;
}

static cu_index *cu_index_of(sym_module *m, Dwarf_Die *cu) {
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (size_t i = 0; i < m->n_cus; i++)
        if (m->cus[i].off == off)
            return &m->cus[i];
    TP_MEM_XGROW(m->cus, m->cap_cus, m->n_cus + 1);
    cu_index *x = &m->cus[m->n_cus++];
    memset(x, 0, sizeof *x);
    x->off = off;
    size_t cap_tops = 0, cap_ranges = 0;
    Dwarf_Die d;
    if (dwarf_child(cu, &d) != 0)
        return x;
    do {
        if (dwarf_tag(&d) == DW_TAG_imported_unit)
            x->imports = 1;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t at = 0;
        size_t first = x->n_ranges;
        while ((at = dwarf_ranges(&d, at, &base, &lo, &hi)) > 0) {
            TP_MEM_XGROW(x->ranges, cap_ranges, x->n_ranges + 1);
            x->ranges[x->n_ranges++] = (cu_range){lo, hi, (uint32_t)x->n_tops};
        }
        if (x->n_ranges > first) {
            TP_MEM_XGROW(x->tops, cap_tops, x->n_tops + 1);
            x->tops[x->n_tops++] = d;
        }
    } while (next_sibling(&d));
    return x;
}

static int is_func(Dwarf_Die *d) {
    int tag = dwarf_tag(d);
    return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

/* The path from a top-level DIE holding pc down to the deepest DIE holding it (first match at
 * each level, as libdw's walk); returns its length, 0 when no DIE holds pc. */
static int scope_path(const cu_index *x, Dwarf_Addr pc, Dwarf_Die **path, size_t *cap) {
    const cu_range *r = NULL;
    for (size_t i = 0; i < x->n_ranges && !r; i++)
        if (x->ranges[i].lo <= pc && pc < x->ranges[i].hi)
            r = &x->ranges[i];
    if (!r)
        return 0;
    int n = 0;
    TP_MEM_XGROW(*path, *cap, (size_t)n + 1);
    (*path)[n++] = x->tops[r->die];
    for (;;) {
        Dwarf_Die c;
        int found = 0;
        if (dwarf_child(&(*path)[n - 1], &c) == 0)
            do
                found = dwarf_haspc(&c, pc) > 0;
            while (!found && next_sibling(&c));
        if (!found)
            return n;
        TP_MEM_XGROW(*path, *cap, (size_t)n + 1);
        (*path)[n++] = c;
    }
}

/* Inlined chain and source lines from DWARF; leaves `out` empty when there is no DWARF. */
static void resolve_dwarf(tp_symbolizer *s, sym_module *m, Dwarf_Addr addr, tp_sym *out) {
    Dwarf_Addr cubias;
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, addr, &cubias);
    if (!cu)
        return;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(m->mod, addr);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    cu_index *x = cu_index_of(m, cu);
    Dwarf_Die *scopes = NULL, *chain = NULL;
    int nc = 0;
    size_t cap = 0;
    if (!x->imports) {
        /* the chain innermost first: the path's deepest function and its ancestors */
        int n = scope_path(x, addr - cubias, &chain, &cap);
        while (n > 0 && !is_func(&chain[n - 1]))
            n--;
        for (int i = 0; i < n / 2; i++) {
            Dwarf_Die t = chain[i];
            chain[i] = chain[n - 1 - i], chain[n - 1 - i] = t;
        }
        nc = n;
    } else {
        /* dwarf_getscopes follows an inlined function into its abstract definition, so it
         * only finds the innermost function; its concrete parents come from
         * dwarf_getscopes_die. */
        int n = dwarf_getscopes(cu, addr - cubias, &scopes);
        for (int i = 0; i < n && !nc; i++)
            if (is_func(&scopes[i]))
                nc = dwarf_getscopes_die(&scopes[i], &chain);
    }
    for (int i = 0; i < nc; i++) {
        int tag = dwarf_tag(&chain[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        push_frame(s, out, die_name(&chain[i]), file, line);
        if (tag == DW_TAG_subprogram)
            break;
        call_site(cu, &chain[i], &file, &line);
    }
    free(scopes);
    free(chain);
}

/* `name`: the symbol table's name for the address (slot_func). */
static tp_sym *resolve(tp_symbolizer *s, sym_module *m, uint64_t vaddr, const char *name) {
    tp_sym *out = tp_mem_xcalloc(1, sizeof *out);
    Dwarf_Addr addr = vaddr + m->bias;
    resolve_dwarf(s, m, addr, out);
    if (out->n && name) /* the symbol table's (linkage) name is the precise one for the owner */
        out->f[out->n - 1].func = keep_func(s, name);
    else if (!out->n && name)
        push_frame(s, out, name, NULL, 0);
    out->status = out->n ? TP_SYM_OK : TP_SYM_NO_SYMBOL;
    return out;
}

/* ---------------------------------------------------------------- cache */

static size_t slot_of(const tp_symbolizer *s, uint32_t mod, uint64_t vaddr) {
    size_t mask = s->n_slots - 1;
    size_t i = (size_t)tp_hash_mix64(vaddr ^ ((uint64_t)mod << 48)) & mask;
    while (s->slots[i].mod && (s->slots[i].mod != mod || s->slots[i].vaddr != vaddr))
        i = (i + 1) & mask;
    return i;
}

static void cache_grow(tp_symbolizer *s) {
    sym_slot *old = s->slots;
    size_t n_old = s->n_slots;
    s->n_slots = n_old ? 2 * n_old : 256;
    s->slots = tp_mem_xcalloc(s->n_slots, sizeof *s->slots);
    for (size_t i = 0; i < n_old; i++)
        if (old[i].mod)
            s->slots[slot_of(s, old[i].mod, old[i].vaddr)] = old[i];
    free(old);
}

/* The slot of (mod, vaddr), made when new. */
static sym_slot *slot_get(tp_symbolizer *s, uint32_t mod, uint64_t vaddr) {
    if (2 * (s->n_used + 1) > s->n_slots)
        cache_grow(s);
    size_t i = slot_of(s, mod, vaddr);
    if (!s->slots[i].mod) {
        s->slots[i] = (sym_slot){mod, vaddr, NULL, NULL, 0};
        s->n_used++;
    }
    return &s->slots[i];
}

/* The symbol table's name for the slot's address (NULL: none), looked up once for both
 * tp_symbolize and tp_symbolize_func. */
static const char *slot_func(const sym_module *m, sym_slot *x) {
    if (!x->has_func) {
        GElf_Off off;
        GElf_Sym sym;
        /* libdwfl keeps the symbol table with the module: the name lives until dwfl_end */
        x->func = dwfl_module_addrinfo(m->mod, x->vaddr + m->bias, &off, &sym, NULL, NULL, NULL);
        x->has_func = 1;
    }
    return x->func;
}

const tp_sym *tp_symbolize(tp_symbolizer *s, const char *path, const uint8_t *build_id,
                           size_t build_id_len, uint64_t vaddr) {
    static const tp_sym no_file = {TP_SYM_NO_FILE, 0, {{0}}};
    if (!s || !path)
        return &no_file;
    s->n_lookups++;
    size_t mi = module_get(s, path, build_id, build_id_len);
    sym_module *m = &s->mods[mi];
    if (m->status != TP_SYM_OK)
        return &s->failed[m->status];
    sym_slot *x = slot_get(s, (uint32_t)mi + 1, vaddr);
    if (!x->sym) {
        x->sym = resolve(s, m, vaddr, slot_func(m, x)); /* resolve never touches the table */
        s->n_resolved++;
    }
    return x->sym;
}

const char *tp_symbolize_func(tp_symbolizer *s, const char *path, const uint8_t *build_id,
                              size_t build_id_len, uint64_t vaddr) {
    if (!s || !path)
        return NULL;
    size_t mi = module_get(s, path, build_id, build_id_len); /* may move s->mods */
    const sym_module *m = &s->mods[mi];
    if (m->status != TP_SYM_OK)
        return NULL;
    return slot_func(m, slot_get(s, (uint32_t)mi + 1, vaddr));
}
