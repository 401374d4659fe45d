/* Tests of tp_pairing: the open-range stack and the live-region map against simple
 * references, with enough churn to exercise growth and backward-shift deletion. */
#include "tp_pairing.h"
#include "tp_record.h"

#include "tp_test.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Pops close the innermost push of the same key, whatever is open on other keys. */
static void test_range_stack_nesting(void) {
    tp_range_stack s = {0};
    uint64_t a = TP_PAIR_PUSH_KEY(7, 1), b = TP_PAIR_PUSH_KEY(7, 2);
    CHECK(a != b);
    tp_open_range o = {.key = a, .ts = 10, .msg_sid = 100, .tid = 7};
    CHECK(tp_range_stack_push(&s, &o));
    o = (tp_open_range){.key = b, .ts = 20, .msg_sid = 200, .tid = 7};
    CHECK(tp_range_stack_push(&s, &o));
    o = (tp_open_range){.key = a, .ts = 30, .msg_sid = 300, .tid = 7};
    CHECK(tp_range_stack_push(&s, &o));
    tp_open_range got;
    CHECK(tp_range_stack_take(&s, a, &got));
    CHECK_EQ_U(got.ts, 30);
    CHECK_EQ_U(got.msg_sid, 300);
    CHECK(tp_range_stack_take(&s, a, &got));
    CHECK_EQ_U(got.ts, 10);
    CHECK(!tp_range_stack_take(&s, a, &got));
    CHECK(tp_range_stack_take(&s, b, &got));
    CHECK_EQ_U(got.msg_sid, 200);
    CHECK_EQ_U(s.n, 0);
    tp_range_stack_free(&s);
    CHECK(s.v == NULL && s.cap == 0);
}

#define N_ADDR 4096

/* 200k random puts/takes over addresses that collide in the low bits (aligned like real
 * allocations); every take must return exactly what the reference holds. */
static void test_region_map_churn(void) {
    static uint64_t ref[N_ADDR]; /* size + 1, 0 = absent */
    tp_region_map m = {0};
    size_t live = 0;
    for (int i = 0; i < 200000; i++) {
        size_t k = rnd() % N_ADDR;
        uint64_t addr = 0x7f0000000000ull + (uint64_t)k * 4096;
        if (rnd() % 3) {
            uint64_t size = rnd() % 100000;
            live += ref[k] == 0;
            ref[k] = size + 1;
            CHECK(tp_region_map_put(&m, addr, size));
        } else {
            uint64_t want = ref[k] ? ref[k] - 1 : 0;
            live -= ref[k] != 0;
            ref[k] = 0;
            uint64_t got = tp_region_map_take(&m, addr);
            if (got != want) {
                CHECK_EQ_U(got, want);
                break;
            }
        }
        if (m.n != live) {
            CHECK_EQ_U(m.n, live);
            break;
        }
    }
    CHECK(tp_region_map_put(&m, 0, 5)); /* address 0 is ignored */
    CHECK_EQ_U(tp_region_map_take(&m, 0), 0);
    tp_region_map_free(&m);
    CHECK_EQ_U(tp_region_map_take(&m, 0x7f0000000000ull), 0);
}

/* A region's REGISTER, RESIZE and UNREGISTER move exactly the bytes they change. */
static void test_region_map_apply(void) {
    tp_region_map m = {0};
    int64_t d = 0;
    CHECK(tp_region_map_apply(&m, 0x1000, 300, 0, &d));
    CHECK_EQ_I(d, 300);
    CHECK(tp_region_map_apply(&m, 0x1000, 100, 0, &d)); /* shrink */
    CHECK_EQ_I(d, -200);
    CHECK(tp_region_map_apply(&m, 0x1000, 0, 1, &d));
    CHECK_EQ_I(d, -100);
    CHECK(tp_region_map_apply(&m, 0x1000, 0, 1, &d)); /* unknown: nothing released */
    CHECK_EQ_I(d, 0);
    CHECK_EQ_U(m.n, 0);
    tp_region_map_free(&m);
}

/* A heap's register adds its size to what the allocator holds, an unregister removes it, and
 * a reset (its regions freed, the heap kept) changes nothing: the exports' reserved counters. */
static void test_heap_reserved_delta(void) {
    CHECK_EQ_I(tp_heap_reserved_delta(TP_HEAP_REGISTER, 4096), 4096);
    CHECK_EQ_I(tp_heap_reserved_delta(TP_HEAP_UNREGISTER, 4096), -4096);
    CHECK_EQ_I(tp_heap_reserved_delta(TP_HEAP_RESET, 4096), 0);
    CHECK_EQ_I(tp_heap_reserved_delta(99, 4096), 0);
}

int main(void) {
    TP_RUN(test_range_stack_nesting);
    TP_RUN(test_region_map_churn);
    TP_RUN(test_region_map_apply);
    TP_RUN(test_heap_reserved_delta);
    return tp_test_summary();
}
