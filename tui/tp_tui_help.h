/* tp_tui_help: the key bar at the bottom of the screen and the `?` key reference.
 *
 * Both read the same tables: the app's global keys and the current view's keys
 * (tp_tui_panel.keys, most important first). The key bar starts with how to see every key
 * (`? Keys`), then a kept search and how to clear it, then the most important keys, as many
 * as fit; the reference lists them all, in columns when the screen is wide enough. */
#ifndef TP_TUI_HELP_H
#define TP_TUI_HELP_H

#include "tp_tui_grid.h"
#include "tp_tui_panel.h"

/* Draws the key bar into row y: `? Keys`, `Esc clear "kept"` when kept is not empty,
 * `first[0..n_first)`, the panel's keys (or its help line), then `rest[0..n_rest)`, as many as
 * fit in the row. */
void tp_tui_help_bar(tp_tui_grid *g, int y, const tp_tui_panel *p, const char *kept,
                     const tp_tui_keydoc *first, int n_first, const tp_tui_keydoc *rest,
                     int n_rest);

/* Draws the key reference of view p into rows [y, y + h): its keys, then `global`. */
void tp_tui_help_draw(tp_tui_grid *g, int y, int h, const tp_tui_panel *p,
                      const tp_tui_keydoc *global, int n_global);

#endif
