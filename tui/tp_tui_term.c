/* tp_tui_term: the ncurses front end of tp_tui (tp_tui_run, declared in tp_tui.h) and of the
 * live view (tp_tui_term_run, tp_tui_term.h: the same loop over any grid-drawing app).
 *
 * It only translates: curses keys to TP_TUI_KEY_* codes, the tp_tui grid to the screen
 * (runs of one attribute written with addstr), and KEY_RESIZE to tp_tui_resize. The
 * locale decides whether UTF-8 is drawn or everything falls back to ASCII. */
#include "tp_tui_term.h"

#include "tp_tui.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <string.h>
#include <unistd.h>

static int map_key(int k) {
    switch (k) {
    case KEY_UP:
        return TP_TUI_KEY_UP;
    case KEY_DOWN:
        return TP_TUI_KEY_DOWN;
    case KEY_LEFT:
        return TP_TUI_KEY_LEFT;
    case KEY_RIGHT:
        return TP_TUI_KEY_RIGHT;
    case KEY_PPAGE:
        return TP_TUI_KEY_PGUP;
    case KEY_NPAGE:
        return TP_TUI_KEY_PGDN;
    case KEY_HOME:
        return TP_TUI_KEY_HOME;
    case KEY_END:
        return TP_TUI_KEY_END;
    case KEY_BACKSPACE:
        return TP_TUI_KEY_BACKSPACE;
    case KEY_BTAB:
        return TP_TUI_KEY_BTAB;
    case KEY_ENTER:
    case '\r':
        return TP_TUI_KEY_ENTER;
    default:
        return k;
    }
}

static chtype attr_of(int a) {
    switch (a) {
    case TP_TUI_A_TITLE:
        return A_REVERSE;
    case TP_TUI_A_HEADER:
        return A_BOLD;
    case TP_TUI_A_SELECT:
        return A_REVERSE;
    case TP_TUI_A_CURSOR:
        return A_REVERSE | A_BOLD | (has_colors() ? COLOR_PAIR(2) : 0);
    case TP_TUI_A_BUSY:
        return has_colors() ? COLOR_PAIR(1) : A_NORMAL;
    case TP_TUI_A_KEY:
        return A_REVERSE | A_BOLD;
    case TP_TUI_A_WARN:
        return A_BOLD | (has_colors() ? COLOR_PAIR(3) : 0);
    default:
        return A_NORMAL;
    }
}

/* What a non-UTF-8 terminal shows for a cell holding a non-ASCII character: the UI's own
 * glyphs get an ASCII look-alike, anything else (user text) '?'. */
static const char *ascii_of(const char *ch) {
    static const char *const map[][2] = {{"\u2026", "~"}, {"\u25bc", "v"}, {"\u2588", "#"},
                                         {"\u2591", "."}, {"\u00b5", "u"}, {"\u00b7", "."}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(ch, map[i][0]))
            return map[i][1];
    return "?";
}

/* Copies one grid row to the screen, one addstr per run of cells with the same attribute. */
static void blit_row(const tp_tui_grid *g, int y, int utf8) {
    char run[8192];
    size_t n = 0;
    int x0 = 0, attr = -1;
    for (int x = 0; x <= g->w; x++) {
        const tp_tui_cell *c = x < g->w ? &g->c[(size_t)y * (size_t)g->w + (size_t)x] : NULL;
        if (c && c->cont)
            continue;
        if (!c || c->attr != attr || n + sizeof c->ch >= sizeof run) {
            if (n) {
                run[n] = 0;
                attrset(attr_of(attr));
                mvaddstr(y, x0, run);
            }
            n = 0, x0 = x, attr = c ? c->attr : -1;
        }
        if (!c)
            break;
        size_t len = strlen(c->ch);
        if (!utf8) /* one byte per cell: drops combining marks too */
            run[n++] = (unsigned char)c->ch[0] >= 0x80 ? ascii_of(c->ch)[0] : c->ch[0];
        else
            memcpy(run + n, c->ch, len), n += len;
    }
    attrset(A_NORMAL);
}

static void draw(const tp_tui_term_app *app, int utf8) {
    const tp_tui_grid *g = app->render(app->ctx);
    erase();
    for (int y = 0; y < g->h; y++)
        blit_row(g, y, utf8);
    refresh();
}

static void start_colors(void) {
    if (!has_colors())
        return;
    start_color();
    use_default_colors();
    init_pair(1, COLOR_GREEN, -1);
    init_pair(2, COLOR_YELLOW, -1);
    init_pair(3, COLOR_RED, -1);
}

tp_status tp_tui_term_run(const tp_tui_term_app *app) {
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return TP_ERR_STATE;
    setlocale(LC_ALL, "");
    int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (!initscr())
        return TP_ERR_STATE;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    start_colors();
    timeout(app->tick_ms > 0 ? app->tick_ms : -1);
    app->resize(app->ctx, COLS, LINES);
    int errs = 0;
    for (;;) {
        draw(app, utf8);
        int k = getch();
        if (k == KEY_RESIZE) {
            app->resize(app->ctx, COLS, LINES);
            continue;
        }
        if (k == ERR && app->tick_ms > 0 && isatty(STDIN_FILENO)) { /* the tick, not an error */
            if (app->tick)
                app->tick(app->ctx);
            continue;
        }
        if (k == ERR) { /* the terminal went away: stop rather than spin */
            if (++errs > 100 || !isatty(STDIN_FILENO))
                break;
            continue;
        }
        errs = 0;
        if (app->key(app->ctx, map_key(k)))
            break;
    }
    endwin();
    return TP_OK;
}

static const tp_tui_grid *tui_render(void *t) {
    return tp_tui_render(t);
}

static void tui_resize(void *t, int w, int h) {
    tp_tui_resize(t, w, h);
}

static int tui_key(void *t, int k) {
    return tp_tui_key(t, k);
}

tp_status tp_tui_run(tp_tui *t) {
    /* The tick redraws: a view whose data a background thread computes (tp_tui_opts
     * .background) shows as soon as it is there, without waiting for a key. */
    tp_tui_term_app app = {t, tui_render, tui_resize, tui_key, NULL, 250};
    return tp_tui_term_run(&app);
}
