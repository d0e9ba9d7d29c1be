/* Linked by cables-cc before the program's objects: its .bss comes right
 * after the copy-relocated libc objects (stdout, environ, ...), which stay
 * per node; from this page on, the program's .bss is shared.  The marker's
 * bytes after its first are the runtime's, for the whole program
 * (cb.program: libcables/src/internal.h, statics.c): two pages, the second
 * for words read often and written seldom (pthread_shim/src/shim.h). */
__attribute__((aligned(4096))) char cables_statics_bss_begin[8192];

/* The first of the program's constructors (priority 101: before any
 * other's, after libc registered its own end): the runtime's end becomes
 * the exit handler registered first, so it runs after every handler the
 * program's constructors register, its C++ static objects' destructors
 * among them, which may read shared data only the runtime can fetch.
 * (cables_main registers it there otherwise: libcables/src/start.c.) */
void cables_register_end(void);
__attribute__((constructor(101))) static void cables_end_last(void) { cables_register_end(); }
