#ifndef CMERIDIAN_SQLITE_H
#define CMERIDIAN_SQLITE_H

/// Turns off the firing of triggers on one SQLite connection (`SQLITE_DBCONFIG_ENABLE_TRIGGER`), for the
/// statements it prepares from now on. `connection` is a `sqlite3 *`.
///
/// Returns 0 when triggers are off, else the SQLite error code (or -1 if SQLite left them on).
///
/// `sqlite3_db_config` is a variadic C function, which Swift cannot call; this wraps the one use Meridian has.
int meridian_sqlite3_disable_triggers(void *connection);

/// Turns off SQLite's memory statistics for the whole process (`SQLITE_CONFIG_MEMSTATUS`, 0): with them on, every
/// allocation and free inside SQLite takes a process-wide mutex to count the bytes. `sqlite3_config` works only before
/// SQLite is initialized (the first connection opened in the process initializes it).
///
/// Returns 0 when the statistics are off, else SQLite's result code (`SQLITE_MISUSE` once SQLite is initialized).
///
/// `sqlite3_config` is a variadic C function, which Swift cannot call.
int meridian_sqlite3_disable_memory_statistics(void);

/// Whether SQLite counts the bytes it allocates: SQLite's bytes in use (`sqlite3_memory_used`) is above 0. Call it
/// while a connection is open (an open connection always holds some memory).
int meridian_sqlite3_memory_statistics_on(void);

/// Binds `byteCount` bytes of UTF-8 at `text` to parameter `index` of `statement` (a `sqlite3_stmt *`), copied by
/// SQLite (`SQLITE_TRANSIENT`); `text` may be NULL when `byteCount` is 0 (an empty string, not SQL NULL).
///
/// Unlike GRDB's binding of a `String`, which passes a C string, the caller need not make a NUL-terminated copy
/// (`String.withUTF8` gives the bytes in place).
///
/// Returns SQLite's result code.
int meridian_sqlite3_bind_text(void *statement, int index, const void *text, int byteCount);

/// ``meridian_sqlite3_bind_text`` without the copy (`SQLITE_STATIC`): SQLite reads the bytes where they are, so they
/// must stay valid and unchanged until the statement has stepped and been reset, and the parameter must be bound
/// again before the statement next steps. `text` may be NULL when `byteCount` is 0 (an empty string, not SQL NULL).
///
/// Returns SQLite's result code.
int meridian_sqlite3_bind_text_in_place(void *statement, int index, const void *text, int byteCount);

/// Steps `statement` (a `sqlite3_stmt *` whose parameters are bound) to its end, skipping any rows it returns, and
/// resets it. Returns `SQLITE_DONE` (101), or the extended error code, with the error message copied into `message`
/// (`capacity` bytes, NUL-terminated) before the reset.
int meridian_sqlite3_step_to_end(void *statement, char *message, int capacity);

/// Steps `statement` (a `sqlite3_stmt *` whose parameters are bound) once. Returns `SQLITE_ROW` (100) when it stands
/// on a row (read it with ``meridian_sqlite3_column``, then step again); otherwise the statement is reset and the
/// result is `SQLITE_DONE` (101), or the extended error code with the error message copied into `message` (`capacity`
/// bytes, NUL-terminated) before the reset.
int meridian_sqlite3_step_row(void *statement, char *message, int capacity);

/// Resets `statement` (a `sqlite3_stmt *`), for a caller that stops reading its rows before the end.
void meridian_sqlite3_reset(void *statement);

/// Binds a 64-bit integer to parameter `index` of `statement` (a `sqlite3_stmt *`). Returns SQLite's result code.
int meridian_sqlite3_bind_int64(void *statement, int index, long long value);

/// Limits how long statements on `connection` (a `sqlite3 *`) may run from now: past `budgetNanoseconds` of the
/// monotonic clock, SQLite's progress handler (checked every 1,000 virtual-machine steps) interrupts the running
/// statement, which then fails with `SQLITE_INTERRUPT`. A budget of 0 or less removes the limit.
void meridian_sqlite3_limit_time(void *connection, long long budgetNanoseconds);

/// One column of the row a statement stands on, as SQLite stores it: `type` is `SQLITE_INTEGER` (1), `SQLITE_FLOAT`
/// (2), `SQLITE_TEXT` (3), `SQLITE_BLOB` (4) or `SQLITE_NULL` (5); `integer` or `real` holds a number, `bytes` and
/// `count` the UTF-8 of a text or the bytes of a blob (valid until the statement steps or is reset; `bytes` may be
/// NULL when `count` is 0).
typedef struct {
    int type;
    int count;
    long long integer;
    double real;
    const void *bytes;
} meridian_sqlite3_value;

/// Reads column `index` of `statement` (a `sqlite3_stmt *` standing on a row) into `value`, in one call: a text's
/// length comes from SQLite (no `strlen`), and nothing is copied.
void meridian_sqlite3_column(void *statement, int index, meridian_sqlite3_value *value);

#endif
