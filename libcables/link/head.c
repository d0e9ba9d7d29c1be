/* Linked by cables-cc before the program's objects: its .bss comes right
 * after the copy-relocated libc objects (stdout, environ, ...), which stay
 * per node; from this page on, the program's .bss is shared.  The marker's
 * bytes after its first are the runtime's, for the whole program
 * (cb.program: libcables/src/internal.h, statics.c): two pages, the second
 * for words read often and written seldom (pthread_shim/src/shim.h). */
__attribute__((aligned(4096))) char cables_statics_bss_begin[8192];

/* The runtime's end comes after everything the program runs at its exit,
 * which may read shared data only the runtime can fetch: its exit handlers
 * (C++ static objects' destructors among them) and its destructor
 * functions, which glibc runs after every exit handler.  The first of the
 * program's constructors (priority 101: before any other's) says so, and
 * the last of its destructors (101: after any other's) ends the runtime
 * (libcables/src/start.c). */
void cables_end_in_fini(void);
void cables_end_from_fini(void);
__attribute__((constructor(101))) static void cables_end_last(void) { cables_end_in_fini(); }
__attribute__((destructor(101))) static void cables_end_now(void) { cables_end_from_fini(); }
