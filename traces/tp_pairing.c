/* tp_pairing: open-range stacks and the live-region map (see tp_pairing.h). */
#include "tp_pairing.h"

#include "tp_mem.h"
#include "tp_record.h"

#include <stdlib.h>
#include <string.h>

int tp_range_stack_push(tp_range_stack *s, const tp_open_range *o) {
    if (!TP_MEM_GROW(s->v, s->cap, s->n + 1))
        return 0;
    s->v[s->n++] = *o;
    return 1;
}

/* Searches from the innermost: a pop closes the latest push of its thread and domain. */
int tp_range_stack_take(tp_range_stack *s, uint64_t key, tp_open_range *out) {
    for (size_t i = s->n; i-- > 0;) {
        if (s->v[i].key != key)
            continue;
        *out = s->v[i];
        if (i + 1 < s->n) /* not the top (the common case: no call to move nothing) */
            memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
        s->n--;
        return 1;
    }
    return 0;
}

void tp_range_stack_free(tp_range_stack *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

static size_t region_slot(const tp_region_map *m, uint64_t addr) {
    size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (m->cap - 1);
    while (m->addr[i] && m->addr[i] != addr)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int region_grow(tp_region_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 256; /* a power of two: slots are hash & (cap - 1) */
    tp_region_map g = {tp_mem_calloc(cap, sizeof(uint64_t)), tp_mem_calloc(cap, sizeof(uint64_t)),
                       cap, 0};
    if (!g.addr || !g.size) {
        free(g.addr);
        free(g.size);
        return 0;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->addr[i]) {
            size_t j = region_slot(&g, m->addr[i]);
            g.addr[j] = m->addr[i];
            g.size[j] = m->size[i];
            g.n++;
        }
    free(m->addr);
    free(m->size);
    *m = g;
    return 1;
}

int tp_region_map_put(tp_region_map *m, uint64_t addr, uint64_t size) {
    if (!addr)
        return 1;
    if ((m->n + 1) * 2 > m->cap && !region_grow(m))
        return 0;
    size_t i = region_slot(m, addr);
    m->n += !m->addr[i];
    m->addr[i] = addr;
    m->size[i] = size;
    return 1;
}

/* Empties slot i by backward-shift deletion: the rest of the probe run is re-placed so
 * lookups stay right. */
static void region_delete(tp_region_map *m, size_t i) {
    m->addr[i] = 0;
    m->n--;
    for (size_t j = (i + 1) & (m->cap - 1); m->addr[j]; j = (j + 1) & (m->cap - 1)) {
        uint64_t a = m->addr[j], s = m->size[j];
        m->addr[j] = 0;
        size_t k = region_slot(m, a);
        m->addr[k] = a;
        m->size[k] = s;
    }
}

uint64_t tp_region_map_take(tp_region_map *m, uint64_t addr) {
    if (!m->cap || !addr)
        return 0;
    size_t i = region_slot(m, addr);
    if (!m->addr[i])
        return 0;
    uint64_t size = m->size[i];
    region_delete(m, i);
    return size;
}

/* A take and a put of the same address, from one probe: a resize updates its slot in place, a
 * new region takes the empty slot the probe ended on (when the table needs no growing). */
int tp_region_map_apply(tp_region_map *m, uint64_t addr, uint64_t size, int unregister,
                        int64_t *delta) {
    size_t i = 0;
    uint64_t old = 0;
    if (m->cap && addr) {
        i = region_slot(m, addr);
        old = m->addr[i] ? m->size[i] : 0;
    }
    /* sizes come from the file: subtract in unsigned arithmetic, never overflow a signed */
    *delta = (int64_t)((unregister ? 0 : size) - old);
    if (m->cap && addr && m->addr[i]) { /* known */
        if (unregister)
            region_delete(m, i);
        else
            m->size[i] = size;
        return 1;
    }
    if (unregister || !addr)
        return 1;
    if ((m->n + 1) * 2 > m->cap) /* grows first: the slot moves */
        return tp_region_map_put(m, addr, size);
    m->addr[i] = addr;
    m->size[i] = size;
    m->n++;
    return 1;
}

void tp_region_map_free(tp_region_map *m) {
    free(m->addr);
    free(m->size);
    memset(m, 0, sizeof *m);
}

int64_t tp_heap_reserved_delta(uint32_t op, uint64_t size) {
    return op == TP_HEAP_REGISTER ? (int64_t)size : op == TP_HEAP_UNREGISTER ? -(int64_t)size : 0;
}
