/* tp_export_sqlite_mem: the memory_live_blocks table (see the header). */
#include "tp_export_sqlite_mem.h"

#include <sqlite3.h>
#include <stdio.h>

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS memory_live_blocks (moment TEXT NOT NULL, moment_ts INTEGER, "
    "addr INTEGER, size INTEGER, ts INTEGER, site TEXT, stack_id INTEGER, steps_alive INTEGER, "
    "device INTEGER)";

static const char insert[] = "INSERT INTO memory_live_blocks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";

static int put(sqlite3_stmt *s, const tp_export_mblock *b) {
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, b->moment, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)b->moment_ts);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)b->addr);
    sqlite3_bind_int64(s, 4, b->size);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)b->ts);
    sqlite3_bind_text(s, 6, b->site, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 7, b->stack);
    sqlite3_bind_int64(s, 8, b->steps_alive);
    sqlite3_bind_int64(s, 9, b->device);
    return sqlite3_step(s) == SQLITE_DONE;
}

tp_status tp_export_sqlite_live_blocks(const char *path, const tp_export_mblock *b, size_t n,
                                       char *err, size_t err_size) {
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
             sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, insert, -1, &s, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < n; i++)
        ok = put(s, &b[i]);
    ok = ok && sqlite3_finalize(s) == SQLITE_OK;
    s = NULL;
    ok = ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok && err && err_size)
        snprintf(err, err_size, "%s: memory_live_blocks: %s", path,
                 db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_finalize(s);
    sqlite3_close(db);
    return ok ? TP_OK : TP_ERR_IO;
}
