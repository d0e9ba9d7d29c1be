/* Linked by cables-cc after the program's objects: the program's .data
 * ends before this page, which holds nothing shared. */
__attribute__((aligned(4096))) char cables_statics_data_end[1] = { 1 };
