/* tp_tui_memory: the Memory view: who holds device memory, over time.
 *
 * Allocated (full cells) and reserved (shaded cells above them) over the rank's memory
 * timeline, one column per time bucket (its maximum), with a cursor; under it, at the cursor,
 * the top holders by allocation site and the segment map: each segment a row of cells, live
 * (full) against free (dotted), as the allocator replay (tp_an_memuse, the report's Device
 * memory section) has it at that moment. Keys: Left/Right move the cursor one column,
 * Home/End to the ends, p to the peak, o to the failed allocation, Up/Down/PgUp/PgDn scroll
 * the holders and segments. */
#ifndef TP_TUI_MEMORY_H
#define TP_TUI_MEMORY_H

#include "tp_tui_data.h"
#include "tp_tui_panel.h"

/* A new Memory panel over d (which must outlive it); d->a must hold TP_RA_MEMUSE. */
tp_tui_panel *tp_tui_memory_new(tp_tui_data *d);

#endif
