/* Linked by cables-cc before the program's objects: its .bss comes right
 * after the copy-relocated libc objects (stdout, environ, ...), which stay
 * per node; from this page on, the program's .bss is shared.  The marker's
 * bytes after its first are the runtime's, for the whole program
 * (cb.program: libcables/src/internal.h, statics.c): two pages, the second
 * for words read often and written seldom (pthread_shim/src/shim.h). */
__attribute__((aligned(4096))) char cables_statics_bss_begin[8192];
