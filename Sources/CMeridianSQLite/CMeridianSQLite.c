#include "CMeridianSQLite.h"

#include <sqlite3.h>
#include <stddef.h>

int meridian_sqlite3_disable_triggers(void *connection) {
    int enabled = -1;
    int code = sqlite3_db_config((sqlite3 *)connection, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled);
    if (code != SQLITE_OK) return code;
    return enabled == 0 ? 0 : -1;
}

int meridian_sqlite3_bind_text(void *statement, int index, const void *text, int byteCount) {
    if (text == NULL || byteCount == 0) {
        return sqlite3_bind_text((sqlite3_stmt *)statement, index, "", 0, SQLITE_STATIC);
    }
    return sqlite3_bind_text((sqlite3_stmt *)statement, index, (const char *)text, byteCount, SQLITE_TRANSIENT);
}
