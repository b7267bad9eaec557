#ifndef C_MERIDIAN_PROCESS_IO_H
#define C_MERIDIAN_PROCESS_IO_H

#include <dirent.h>

/// Whether `entry` is one of the whole-size records the process's `readdir` hands out (MeridianProcessIO's fix for
/// Foundation's `Process.run()`; see CMeridianProcessIO.c). 1 when it is, 0 otherwise.
int meridian_readdir_is_whole_record(const struct dirent *entry);

#endif
