#include "CMeridianSQLite.h"

#include <sqlite3.h>

int meridian_sqlite3_disable_triggers(void *connection) {
    int enabled = -1;
    int code = sqlite3_db_config((sqlite3 *)connection, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled);
    if (code != SQLITE_OK) return code;
    return enabled == 0 ? 0 : -1;
}
