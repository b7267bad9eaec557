#include "CMeridianSQLite.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

int meridian_sqlite3_disable_triggers(void *connection) {
    int enabled = -1;
    int code = sqlite3_db_config((sqlite3 *)connection, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled);
    if (code != SQLITE_OK) return code;
    return enabled == 0 ? 0 : -1;
}

int meridian_sqlite3_disable_memory_statistics(void) {
    int code = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return code == SQLITE_OK ? 0 : code;
}

int meridian_sqlite3_memory_statistics_on(void) { return sqlite3_memory_used() > 0; }

int meridian_sqlite3_bind_text(void *statement, int index, const void *text, int byteCount) {
    if (text == NULL || byteCount == 0) {
        return sqlite3_bind_text((sqlite3_stmt *)statement, index, "", 0, SQLITE_STATIC);
    }
    return sqlite3_bind_text((sqlite3_stmt *)statement, index, (const char *)text, byteCount, SQLITE_TRANSIENT);
}

int meridian_sqlite3_bind_text_in_place(void *statement, int index, const void *text, int byteCount) {
    if (text == NULL || byteCount == 0) {
        return sqlite3_bind_text((sqlite3_stmt *)statement, index, "", 0, SQLITE_STATIC);
    }
    return sqlite3_bind_text((sqlite3_stmt *)statement, index, (const char *)text, byteCount, SQLITE_STATIC);
}

int meridian_sqlite3_step_row(void *statement, char *message, int capacity) {
    sqlite3_stmt *stmt = (sqlite3_stmt *)statement;
    int code = sqlite3_step(stmt);
    if (code == SQLITE_ROW) return code;
    if (code != SQLITE_DONE) {
        sqlite3 *db = sqlite3_db_handle(stmt);
        code = sqlite3_extended_errcode(db);
        if (capacity > 0) snprintf(message, (size_t)capacity, "%s", sqlite3_errmsg(db));
    }
    sqlite3_reset(stmt);
    return code;
}

int meridian_sqlite3_step_to_end(void *statement, char *message, int capacity) {
    int code;
    while ((code = meridian_sqlite3_step_row(statement, message, capacity)) == SQLITE_ROW) {
    }
    return code;
}

void meridian_sqlite3_reset(void *statement) {
    sqlite3_reset((sqlite3_stmt *)statement);
}

int meridian_sqlite3_bind_int64(void *statement, int index, long long value) {
    return sqlite3_bind_int64((sqlite3_stmt *)statement, index, value);
}

static long long meridian_monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* The deadline travels in the context pointer itself: nothing to allocate or free. */
static int meridian_past_deadline(void *deadline) {
    return meridian_monotonic_nanoseconds() > (long long)(intptr_t)deadline;
}

void meridian_sqlite3_limit_time(void *connection, long long budgetNanoseconds) {
    if (budgetNanoseconds <= 0) {
        sqlite3_progress_handler((sqlite3 *)connection, 0, NULL, NULL);
        return;
    }
    long long deadline = meridian_monotonic_nanoseconds() + budgetNanoseconds;
    sqlite3_progress_handler((sqlite3 *)connection, 1000, meridian_past_deadline, (void *)(intptr_t)deadline);
}

void meridian_sqlite3_column(void *statement, int index, meridian_sqlite3_value *value) {
    sqlite3_stmt *stmt = (sqlite3_stmt *)statement;
    value->type = sqlite3_column_type(stmt, index);
    value->count = 0;
    value->bytes = NULL;
    switch (value->type) {
    case SQLITE_INTEGER:
        value->integer = sqlite3_column_int64(stmt, index);
        break;
    case SQLITE_FLOAT:
        value->real = sqlite3_column_double(stmt, index);
        break;
    case SQLITE_TEXT:
        value->bytes = sqlite3_column_text(stmt, index);
        value->count = sqlite3_column_bytes(stmt, index);
        break;
    case SQLITE_BLOB:
        value->bytes = sqlite3_column_blob(stmt, index);
        value->count = sqlite3_column_bytes(stmt, index);
        break;
    default:
        break;
    }
}
