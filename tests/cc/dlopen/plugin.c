/* plugin.c: a library built with cables-cc -shared -fPIC, which a
 * program built with cables-cc loads with dlopen (main.c).  Its atomics
 * are calls that the program defines (lib/cables/atomics.o) and exports;
 * as the program's data is shared and a library's is each node's, the
 * counter is the program's. */
#include <stdatomic.h>

long plugin_bump(atomic_long *count) { return atomic_fetch_add(count, 1) + 1; }
