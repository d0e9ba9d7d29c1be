/* hand_over: the pages a detaching node homes reach the master with their
 * data.  Run with CABLES_THREADS_PER_NODE=1 and cables-run -n 1 -m 2: the
 * one thread main creates gets a node attached for it, first-touches
 * (homes there) PAGES coherence pages of a fresh block, every OS page of
 * each written (a pattern), and every 4th coherence page left untouched.
 * Main joins it and waits (up to 20 s) for the node to leave, which hands
 * its homes to the master; then reads everything back.  Last, a home move
 * of one of those pages to the node that left is refused (-1: before, the
 * page went to it and was lost, and the move never returned) and the page
 * keeps its data.
 * usage: hand_over [PAGES]
 * RESULT ok=1 bad=0 words=W detached=D node=N move_to_gone=M */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct job { long *data; long words, per_page; int node; };

static long pattern(long i) { return i * 2654435761L + 17; }

static void *work(void *a)
{
    struct job *j = a;
    for (long i = 0; i < j->words; i++)
        if ((i / j->per_page) % 4 != 3)
            j->data[i] = pattern(i);
    j->node = cables_node_id();
    return NULL;
}

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 512;
    struct job *j = cables_alloc(sizeof *j);
    j->per_page = (long)(cables_page_size() / sizeof(long));
    j->words = pages * j->per_page;
    j->data = cables_alloc((size_t)j->words * sizeof(long));
    j->node = -1;
    cables_thread_t t;
    if (pages < 1 || cables_thread_create(&t, -1, work, j)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    cables_thread_join(t, NULL);
    cables_stats_t st;
    for (int k = 0; k < 2000; k++) { /* the node leaves once its thread ended */
        cables_stats_get(&st);
        if (st.nodes_detached >= 1)
            break;
        usleep(10000);
    }
    long bad = 0;
    for (long i = 0; i < j->words; i++)
        bad += j->data[i] != ((i / j->per_page) % 4 != 3 ? pattern(i) : 0);
    int moved = st.nodes_detached >= 1 ? cables_home_move(j->data, sizeof(long), 1) : 0;
    bad += j->data[0] != pattern(0) || cables_home_of(j->data) != 0;
    int ok = bad == 0 && j->node == 1 && st.nodes_detached >= 1 && moved == -1;
    printf("RESULT ok=%d bad=%ld words=%ld detached=%llu node=%d move_to_gone=%d\n", ok, bad,
           j->words, (unsigned long long)st.nodes_detached, j->node, moved);
    return ok ? 0 : 1;
}
