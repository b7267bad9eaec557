#ifndef C_MERIDIAN_HEAP_H
#define C_MERIDIAN_HEAP_H

#include <stddef.h>

/// The bytes the process's allocator has handed out and not taken back: glibc's `mallinfo2()`, every arena's
/// allocated bytes (`uordblks`) and the blocks it mapped on their own (`hblkhd`). 0 where that is not known.
size_t meridian_heap_in_use(void);

/// Gives the allocator's free memory back to the system (glibc's `malloc_trim(0)`), so that the resident set counts
/// what is in use rather than what earlier work freed; nothing where that is not known.
void meridian_heap_trim(void);

#endif
