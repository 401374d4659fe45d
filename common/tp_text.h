/* tp_text: UTF-8 decoding and terminal-safe text, the one definition every text writer uses.
 *
 * Names in a trace (kernels, ranges, threads, command lines, paths) come from the profiled
 * program and are printed by `report`, `info`, `record`, `export` and the TUI. Written raw,
 * an ESC sequence in a range name clears the screen or retitles the terminal, and a CR or a
 * newline forges report lines. tp_text_safe rewrites what a terminal would act on, so the
 * text shows what the trace holds and nothing else happens:
 *   - C0 controls (U+0000..U+001F: ESC, CR, LF, TAB, ...) and DEL: `\x1b`, `\x0d`, `\x7f`;
 *   - C1 controls (U+0080..U+009F, which some terminals obey like ESC [): `\u009b`;
 *   - bytes that are not part of valid UTF-8 (cut, overlong, surrogates, > U+10FFFF): `\xff`.
 * Everything else, printable UTF-8 included, is copied unchanged, so a clean name prints
 * byte for byte as before. JSON writers do not use this (JSON escapes controls itself and
 * keeps names exact); they use tp_text_utf8_fix, since a JSON document must be UTF-8.
 * The TUI decodes with tp_utf8_next and classifies with tp_text_cp_is_control too. */
#ifndef TP_TEXT_H
#define TP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What tp_utf8_next gives for a byte that starts no valid character (not a code point). */
#define TP_UTF8_INVALID 0x110000u

/* Decodes the character at `s` (n >= 1 bytes readable). Returns its length in bytes (1..4)
 * and sets *cp to its code point, or returns 1 with *cp = TP_UTF8_INVALID when the byte does
 * not start a valid, complete, shortest-form sequence of a code point outside the surrogates. */
int tp_utf8_next(const char *s, size_t n, uint32_t *cp);

/* 1 for what tp_text_safe escapes: C0 controls, DEL, C1 controls and TP_UTF8_INVALID. */
int tp_text_cp_is_control(uint32_t cp);

/* 1 when `s` (NUL-terminated; NULL counts as safe) prints as is. */
int tp_text_is_safe(const char *s);

/* Bytes the safe form of `s` takes, the terminating NUL included (1 for NULL). */
size_t tp_text_safe_size(const char *s);

/* Writes the safe form of `s` (NULL: "") into `out` of `cap` >= 1 bytes, cut at a character
 * (or escape) boundary when it does not fit, and returns `out`. */
const char *tp_text_safe(char *out, size_t cap, const char *s);

/* The safe form of `s` in a new string (caller frees); NULL only when out of memory. */
char *tp_text_safe_dup(const char *s);

/* Writes the safe form of `s` to `f`; returns what fputs returns (EOF on error). */
int tp_text_fputs(const char *s, FILE *f);

/* `len` bytes of `s` as valid UTF-8: the same bytes when they are valid, else a copy where
 * each byte that starts no valid character is U+FFFD. Returns `s` itself when valid, else a
 * new string (NUL-terminated, length in *out_len) the caller frees; NULL when out of memory.
 * *out_len is always set. */
const char *tp_text_utf8_fix(const char *s, size_t len, size_t *out_len);

#endif
