/* two_nodes.h: the start of the test programs that run on 2 nodes or more
 * for a number of rounds (argv[1]), and of those that run one thread on
 * node 0 and one on node 1. */
#ifndef TWO_NODES_H
#define TWO_NODES_H
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>

/* argv[1], else def; the program ends (status 2, a RESULT line saying why)
 * unless the run has 2 nodes or more and the rounds are 1 or more */
static inline long two_node_rounds(int argc, char **argv, long def)
{
    long rounds = argc > 1 ? atol(argv[1]) : def;
    if (cables_node_count() < 2 || rounds < 1) {
        printf("RESULT ok=0 error=needs_2_nodes_and_rounds\n");
        exit(2);
    }
    return rounds;
}

/* h(arg) on node 0 and r(arg) on node 1, both joined; the program ends
 * (status 1, a RESULT line) if either cannot be created */
static inline void two_node_run(void *(*h)(void *), void *(*r)(void *), void *arg)
{
    cables_thread_t th, tr;
    if (cables_thread_create(&th, 0, h, arg) || cables_thread_create(&tr, 1, r, arg)) {
        printf("RESULT ok=0 error=create\n");
        exit(1);
    }
    cables_thread_join(th, NULL);
    cables_thread_join(tr, NULL);
}
#endif
