#ifndef CMERIDIAN_SQLITE_H
#define CMERIDIAN_SQLITE_H

/// Turns off the firing of triggers on one SQLite connection (`SQLITE_DBCONFIG_ENABLE_TRIGGER`), for the
/// statements it prepares from now on. `connection` is a `sqlite3 *`.
///
/// Returns 0 when triggers are off, else the SQLite error code (or -1 if SQLite left them on).
///
/// `sqlite3_db_config` is a variadic C function, which Swift cannot call; this wraps the one use Meridian has.
int meridian_sqlite3_disable_triggers(void *connection);

#endif
