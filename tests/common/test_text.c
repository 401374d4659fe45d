/* test_text: terminal-safe text (tp_text). Every control a terminal acts on, and every byte
 * that is not UTF-8, comes out escaped; printable UTF-8 comes out byte for byte; cuts fall on
 * character boundaries; the JSON fix keeps valid text identical and only replaces bad bytes. */
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "tp_text.h"

static void check_safe(const char *in, const char *want) {
    char buf[256];
    tp_text_safe(buf, sizeof buf, in);
    CHECK_STR(buf, want);
    CHECK_EQ_U(tp_text_safe_size(in), strlen(want) + 1);
    char *dup = tp_text_safe_dup(in);
    CHECK_STR(dup, want);
    free(dup);
    CHECK_EQ_I(tp_text_is_safe(in), strcmp(in, want) == 0);
}

static void test_controls_escaped(void) {
    check_safe("plain name", "plain name");
    check_safe("\x1b[2J\x1b]0;pwned\x07", "\\x1b[2J\\x1b]0;pwned\\x07");
    check_safe("a\rb\nc\td", "a\\x0db\\x0ac\\x09d");
    check_safe("del\x7f", "del\\x7f");
    /* C1: U+009B (CSI) and U+0085 (NEL), valid UTF-8 that terminals may obey */
    check_safe("x\xc2\x9b"
               "31m",
               "x\\u009b31m");
    check_safe("\xc2\x85", "\\u0085");
}

static void test_utf8_kept_and_bad_bytes_escaped(void) {
    check_safe("\xc2\xb5s caf\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80", /* µs café 漢 😀 */
               "\xc2\xb5s caf\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80");
    check_safe("bad\xff\xfe", "bad\\xff\\xfe");
    check_safe("cut\xe6\xbc", "cut\\xe6\\xbc");          /* a sequence cut short */
    check_safe("over\xc0\xaf", "over\\xc0\\xaf");        /* overlong '/' */
    check_safe("sur\xed\xa0\x80", "sur\\xed\\xa0\\x80"); /* a UTF-16 surrogate */
    check_safe("\xef\xbf\xbd", "\xef\xbf\xbd");          /* a real U+FFFD is printable */
}

static void test_cut_on_boundaries(void) {
    char buf[6];
    tp_text_safe(buf, sizeof buf,
                 "ab\x1b"
                 "cd"); /* "ab\x1b" needs 6 bytes: cut before it */
    CHECK_STR(buf, "ab");
    tp_text_safe(buf, sizeof buf, "abc\xe6\xbc\xa2"); /* 3 + 3 bytes do not fit in 5 */
    CHECK_STR(buf, "abc");
    tp_text_safe(buf, 1, "abc");
    CHECK_STR(buf, "");
    CHECK_STR(tp_text_safe(buf, sizeof buf, NULL), "");
}

static void test_fputs(void) {
    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK_EQ_I(tp_text_fputs("t\x1b"
                             "x\xff",
                             f),
               0);
    rewind(f);
    char got[64] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    fclose(f);
    CHECK_STR(got, "t\\x1bx\\xff");
}

static void test_utf8_fix(void) {
    size_t n;
    const char *ok = "esc\x1b cr\r caf\xc3\xa9";
    CHECK(tp_text_utf8_fix(ok, strlen(ok), &n) == ok); /* valid: the same bytes, no copy */
    CHECK_EQ_U(n, strlen(ok));
    const char *bad = "a\xff"
                      "b\xe6\xbc";
    const char *fixed = tp_text_utf8_fix(bad, strlen(bad), &n);
    CHECK(fixed != bad);
    CHECK_STR(fixed, "a\xef\xbf\xbd"
                     "b\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_EQ_U(n, strlen(fixed));
    free((void *)fixed);
}

static void test_decoder(void) {
    uint32_t cp;
    CHECK_EQ_I(tp_utf8_next("\xf0\x9f\x98\x80", 4, &cp), 4);
    CHECK_EQ_U(cp, 0x1F600);
    CHECK_EQ_I(tp_utf8_next("\xf0\x9f\x98\x80", 3, &cp), 1); /* not all bytes readable */
    CHECK_EQ_U(cp, TP_UTF8_INVALID);
    CHECK_EQ_I(tp_utf8_next("\xf4\x90\x80\x80", 4, &cp), 1); /* > U+10FFFF */
    CHECK_EQ_U(cp, TP_UTF8_INVALID);
    CHECK(tp_text_cp_is_control(0x1b) && tp_text_cp_is_control(0x9f));
    CHECK(!tp_text_cp_is_control(0xa0) && !tp_text_cp_is_control(' '));
}

int main(void) {
    TP_RUN(test_controls_escaped);
    TP_RUN(test_utf8_kept_and_bad_bytes_escaped);
    TP_RUN(test_cut_on_boundaries);
    TP_RUN(test_fputs);
    TP_RUN(test_utf8_fix);
    TP_RUN(test_decoder);
    return tp_test_summary();
}
