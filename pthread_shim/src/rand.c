/* rand.c: libc's random number generators are the process's state, kept
 * in libc's own data, which is each node's.  Before, a program that seeded
 * them in main and drew from threads on other nodes drew there from libc's
 * unseeded state: every node but the master drew the same sequence, and
 * the same one at every run whatever main's seed (a Monte Carlo estimate
 * over those samples is not what it seems).
 *
 * One generator shared by every node would cost a cluster lock a draw.
 * Instead each node draws from its own state, seeded from the program's
 * last seed: srand/srandom and srand48/seed48 record the seed in the
 * program's shared static data (cb.program) with a generation, and a draw
 * on a node that has not applied that generation seeds its libc state
 * first.  The master uses the seed itself, so a program drawing from one
 * node only (main) gets libc's own sequence; node k > 0 a mix of the seed
 * and k, a sequence of its own.  Seeds are seen as any shared write is:
 * after a release and an acquire (main seeds, then creates the threads).
 * initstate, setstate and lcong48 act on the calling node's state only
 * (kept until the next seeding).  The seeds are on a page of their own,
 * which only a seeding writes: a draw reads a copy no acquire invalidates
 * otherwise. */
#include <stdlib.h>

#include "shim.h"

struct seeds {
    uint64_t gen, seed;       /* srand/srandom */
    uint64_t gen48, seed48;   /* srand48/seed48: the 48 bits of X */
};

static struct seeds *seeds(void)
{
    _Static_assert(SHIM_PROGRAM_SEEDS + sizeof(struct seeds) <= CB_PROGRAM_BYTES, "seeds");
    return cb.program ? (struct seeds *)((uint8_t *)cb.program + SHIM_PROGRAM_SEEDS) : NULL;
}

/* this node's generations applied.  The master starts with libc's own
 * state (a program that seeds in a constructor, or with initstate, keeps
 * it); another node's state is seeded from the default seeds at its first
 * draw (started: done, or the program set it there itself) */
static uint64_t applied, applied48;
static bool started[2];
static cb_mutex_t apply_mu = CB_MUTEX_INIT; /* one thread reseeds, the others wait for it */

/* node k's seed from the program's (the master's: the program's own) */
static uint64_t mix(uint64_t s)
{
    if (cb.self == 0)
        return s;
    uint64_t z = s + 0x9e3779b97f4a7c15ull * (uint64_t)(cb.self + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void seed_node(uint64_t s) { REAL(srandom)((unsigned)mix(s)); }

static unsigned short *seed_node48(uint64_t x)
{
    x = mix(x) & 0xffffffffffffull;
    unsigned short v[3] = { (unsigned short)x, (unsigned short)(x >> 16), (unsigned short)(x >> 32) };
    return REAL(seed48)(v);
}

/* the program's seed of generation *g, read whole (a seeding elsewhere
 * meanwhile: read again) */
static uint64_t seed_of(const uint64_t *gen, const uint64_t *seed, uint64_t *g)
{
    for (;;) {
        uint64_t v = __atomic_load_n(seed, __ATOMIC_ACQUIRE);
        uint64_t again = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
        if (again == *g)
            return v;
        *g = again;
    }
}

/* before a draw: this node's state follows the program's last seed (libc's
 * default states, srandom(1) and X = 0, when there was none) */
static void follow(void)
{
    struct seeds *s = cb_app_thread ? seeds() : NULL;
    if (!s)
        return;
    uint64_t g = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE),
             g48 = __atomic_load_n(&s->gen48, __ATOMIC_ACQUIRE);
    bool fresh = cb.self != 0 && !(__atomic_load_n(&started[0], __ATOMIC_ACQUIRE) &&
                                   __atomic_load_n(&started[1], __ATOMIC_ACQUIRE));
    if (!fresh && g == __atomic_load_n(&applied, __ATOMIC_ACQUIRE) &&
        g48 == __atomic_load_n(&applied48, __ATOMIC_ACQUIRE))
        return;
    cb_mutex_lock(&apply_mu);
    if (cb.self != 0 && !started[0] && g == applied)
        seed_node(1);
    if (cb.self != 0 && !started[1] && g48 == applied48)
        seed_node48(0);
    __atomic_store_n(&started[0], true, __ATOMIC_RELEASE);
    __atomic_store_n(&started[1], true, __ATOMIC_RELEASE);
    if (g != applied) {
        uint64_t v = seed_of(&s->gen, &s->seed, &g);
        seed_node(g ? v : 1);
        __atomic_store_n(&applied, g, __ATOMIC_RELEASE);
    }
    if (g48 != applied48) {
        uint64_t v = seed_of(&s->gen48, &s->seed48, &g48);
        seed_node48(g48 ? v : 0);
        __atomic_store_n(&applied48, g48, __ATOMIC_RELEASE);
    }
    cb_mutex_unlock(&apply_mu);
}

/* A seeding by an application thread: the program's seed (one generation
 * more, under the program's lock: two nodes seeding at once make two),
 * and this node's state from it.  False: none to record (libc's alone). */
static bool record(bool b48, uint64_t seed, unsigned short **old)
{
    struct seeds *s = cb_app_thread ? seeds() : NULL;
    if (!s)
        return false;
    cables_lock(shim_program_lock());
    cb_mutex_lock(&apply_mu);
    uint64_t *gen = b48 ? &s->gen48 : &s->gen, g = *gen + 1;
    __atomic_store_n(b48 ? &s->seed48 : &s->seed, seed, __ATOMIC_RELAXED);
    __atomic_store_n(gen, g, __ATOMIC_RELEASE);
    if (b48)
        *old = seed_node48(seed);
    else
        seed_node(seed);
    __atomic_store_n(b48 ? &applied48 : &applied, g, __ATOMIC_RELEASE);
    __atomic_store_n(&started[b48], true, __ATOMIC_RELEASE);
    cb_mutex_unlock(&apply_mu);
    cables_unlock(shim_program_lock());
    return true;
}

/* a state the program sets itself on this node: kept until the next
 * seeding (not reseeded over at the next draw) */
static void keep_own(bool b48)
{
    struct seeds *s = cb_app_thread ? seeds() : NULL;
    if (!s)
        return;
    cb_mutex_lock(&apply_mu);
    __atomic_store_n(b48 ? &applied48 : &applied,
                     __atomic_load_n(b48 ? &s->gen48 : &s->gen, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    __atomic_store_n(&started[b48], true, __ATOMIC_RELEASE);
    cb_mutex_unlock(&apply_mu);
}

char *initstate(unsigned seed, char *state, size_t n)
{
    char *old = REAL(initstate)(seed, state, n);
    keep_own(false);
    return old;
}

char *setstate(char *state)
{
    char *old = REAL(setstate)(state);
    keep_own(false);
    return old;
}

void lcong48(unsigned short p[7])
{
    REAL(lcong48)(p);
    keep_own(true);
}

void srandom(unsigned seed)
{
    if (!record(false, seed, NULL))
        REAL(srandom)(seed);
}

void srand(unsigned seed) { srandom(seed); }

long random(void)
{
    follow();
    return REAL(random)();
}

int rand(void)
{
    follow();
    return (int)REAL(random)(); /* glibc's rand is random */
}

void srand48(long seed)
{
    unsigned short *old; /* X = the seed's low 32 bits, then 0x330e */
    if (!record(true, ((uint64_t)(uint32_t)seed << 16) | 0x330e, &old))
        REAL(srand48)(seed);
}

unsigned short *seed48(unsigned short v[3])
{
    unsigned short *old;
    follow(); /* the old value: this node's */
    if (!record(true, (uint64_t)v[0] | (uint64_t)v[1] << 16 | (uint64_t)v[2] << 32, &old))
        return REAL(seed48)(v);
    return old;
}

double drand48(void)
{
    follow();
    return REAL(drand48)();
}

long lrand48(void)
{
    follow();
    return REAL(lrand48)();
}

long mrand48(void)
{
    follow();
    return REAL(mrand48)();
}
