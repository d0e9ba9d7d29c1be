/* macros.C: every macro of the set, used the way SPLASH programs use them
 * (statement macros without a trailing `;', *DEC macros inside a struct,
 * G_MALLOC before MAIN_INITENV and in workers, both CREATE forms).
 * Usage: macros NPROCS      RESULT ok=1 checks=N */
MAIN_ENV
#include <stdint.h>
#ifdef CABLES_H /* our G_MALLOC: no small block is page aligned (G_FREE) */
static const uintptr_t page_size = PAGE_SIZE; /* m4 expands no # line */
#define PAGE_ALIGNED(b) ((uintptr_t)(b) % page_size == 0)
#else /* libc's may be */
#define PAGE_ALIGNED(b) 0
#endif

#define STEPS 20

struct GlobalMemory {
    LOCKDEC(lock)
    ALOCKDEC(locks, 8)
    BARDEC(start)
    PAUSEDEC(go)
    GSDEC(gs)
    CONDVARDEC(cv)
    long counter, taken, flag, stepdone;
    long sum[MAX_THREADS];
} *Global;

long P, early[4];
long late; /* a file-scope global written after CREATE, read after a barrier */
static int bad;

static void check(int ok, const char *what)
{
    if (!ok) {
        bad++;
        fprintf(stderr, "FAIL %s\n", what);
    }
}

void Worker(void)
{
    long id, s;
    GET_PID(id)
    char *mine = (char *)G_MALLOC(100)
    memset(mine, (int)id, 100);
    BARRIER(Global->start, P)
    check(late == 42, "global written after CREATE seen after the barrier");
    for (int i = 0; i < STEPS; i++) {
        LOCK(Global->lock)
        Global->counter++;
        UNLOCK(Global->lock)
        ALOCK(Global->locks, i % 8)
        Global->sum[id] += i;
        AULOCK(Global->locks, i % 8)
    }
    for (;;) {
        GETSUB(Global->gs, s, 99, P)
        if (s < 0)
            break;
        LOCK(Global->lock)
        Global->taken++;
        UNLOCK(Global->lock)
    }
    BARRIER(Global->start, P)
    if (id == 0) {
        SETPAUSE(Global->go)
    } else {
        WAITPAUSE(Global->go)
    }
    for (int step = 0; step < 3; step++) {
        BARRIER(Global->start, P)
        if (id == 0) {
            CONDVARINIT(Global->cv) /* re-initialised by a worker every step */
        }
        BARRIER(Global->start, P)
        LOCK(Global->lock)
        if (++Global->stepdone == P * (step + 1)) {
            CONDVARBCAST(Global->cv)
        } else {
            while (Global->stepdone < P * (step + 1))
                CONDVARWAIT(Global->cv, Global->lock)
        }
        UNLOCK(Global->lock)
    }
    check(AGETL(Global->stepdone) >= 3 * P, "condvar steps");
    FULL_FENCE
    G_FREE(mine)
}

void Single(void)
{
    LOCK(Global->lock)
    Global->flag++;
    UNLOCK(Global->lock)
}

int main(int argc, char **argv)
{
    unsigned long t0, t1;
    P = argc > 1 ? atol(argv[1]) : 4;
    if (P < 1 || P > 64) {
        fprintf(stderr, "usage: macros NPROCS (1-64)\n");
        return 2;
    }
    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    char *huge = (char *)G_MALLOC(16UL << 30) /* asked for, never touched but two bytes */
    huge[0] = 1;
    huge[(16UL << 30) - 1] = 2;
    MAIN_INITENV(, 1 << 20)
    CLOCK(t0)
    LOCKINIT(Global->lock)
    ALOCKINIT(Global->locks, 8)
    BARINIT(Global->start, P)
    PAUSEINIT(Global->go)
    GSINIT(Global->gs)
    CONDVARINIT(Global->cv)
    early[0] = 7;
    SPLASH3_ROI_BEGIN
    /* the classic form: one new thread per CREATE, main is thread 0 */
    for (long i = 1; i < P; i++)
        CREATE(Worker)
    late = 42;
    Worker();
    WAIT_FOR_END(P - 1)
    SPLASH3_ROI_END
    /* the current form: n-1 new threads, then the caller */
    CREATE(Single, 3)
    WAIT_FOR_END(2)
    CLOCK(t1)
    check(Global->counter == STEPS * P, "lock counter");
    long total = 0;
    for (long i = 0; i < P; i++)
        total += Global->sum[i];
    check(total == P * (STEPS * (STEPS - 1) / 2), "array locks");
    check(Global->taken == 100, "subscripts 0..99 handed out once each");
    check(Global->flag == 3, "CREATE(proc, n)");
    check(huge[0] == 1 && huge[(16UL << 30) - 1] == 2, "huge lazy G_MALLOC");
    /* G_FREE gives big blocks back: 12 blocks of 8 GB in turn fit in the
     * GAS (64 GB, 16 of them taken above), each zeroed where the last one
     * was written */
    long dirty = 0;
    for (long r = 0; r < 12; r++) {
        size_t sz = 8UL << 30;
        char *b = (char *)G_MALLOC(sz)
        dirty += b[0] != 0 || b[sz / 2] != 0 || b[sz - 1] != 0;
        b[0] = b[sz / 2] = b[sz - 1] = (char)(r + 1);
        G_FREE(b)
    }
    check(dirty == 0, "big blocks freed, reused and zeroed");
    /* small blocks freed (nothing given back) and cut again; none is page
     * aligned on libcables (G_FREE would take it for a block of its own),
     * the one that would be included */
    long smallbad = 0;
    for (long i = 0; i < 600; i++) {
        long *s = (long *)G_MALLOC(16)
        s[0] = i;
        smallbad += PAGE_ALIGNED(s);
        G_FREE(s)
        long *t = (long *)G_MALLOC(16)
        smallbad += t == NULL || PAGE_ALIGNED(t);
    }
    /* 70000 more (a chunk used up to its end, and the next ones), each
     * written, none written over by another */
    long **many = (long **)malloc(70000 * sizeof *many);
    long chunkbad = many == NULL;
    for (long i = 0; many && i < 70000; i++) {
        many[i] = (long *)G_MALLOC(16)
        chunkbad += PAGE_ALIGNED(many[i]);
        many[i][0] = i;
        many[i][1] = ~i;
    }
    for (long i = 0; many && i < 70000; i++)
        chunkbad += many[i][0] != i || many[i][1] != ~i;
    free(many);
    check(smallbad == 0 && chunkbad == 0, "small blocks freed and cut again");
    check(t1 >= t0, "CLOCK");
    check(PAGE_SIZE == 4096, "PAGE_SIZE");
    printf("RESULT ok=%d checks=11 nprocs=%ld\n", bad == 0, P);
    MAIN_END
}
