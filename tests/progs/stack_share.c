/* stack_share: every thread stack, main's included, is in the global
 * address space.
 * 1. main passes a pointer to its own local to a thread on the last node,
 *    which writes through it; main sees the write after the join.
 * 2. A thread on the last node publishes a pointer to its stack array
 *    under a lock; a thread on node 0 (another node when there are 2+)
 *    adds to every element under the lock; the owner sees all of it.
 * 3. A thread recurses through 1 MiB of stack (its stack grows without a
 *    single protocol fault).
 * 4. 300 threads created and joined one after another on the last node:
 *    stacks are reused (300 x 8 MiB would not fit in CABLES_GAS_SIZE=1G).
 * 5. Once another node has read main's stack page, releases that do not
 *    change it make no write notice for it (100 unlocks: at most a couple).
 * RESULT ok=1 main_local=M shared_sum=S recursion=R deep_faults=F threads=T
 *        idle_notices=N */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#define N 64

struct shared {
    cables_lock_t l;
    cables_barrier_t b;
    long *published; /* a pointer into a thread's stack */
    long sum;
    long deep_faults;
};

static void *write_through(void *p)
{
    *(long *)p = 4242; /* p points into main's stack, on node 0 */
    return NULL;
}

static void *owner(void *p)
{
    struct shared *s = p;
    long arr[N]; /* on this thread's stack, homed on this node */
    for (int i = 0; i < N; i++)
        arr[i] = i;
    cables_lock(&s->l);
    s->published = arr;
    cables_unlock(&s->l);
    cables_barrier_wait(&s->b); /* the other thread updates arr */
    cables_barrier_wait(&s->b);
    long sum = 0;
    cables_lock(&s->l);
    for (int i = 0; i < N; i++)
        sum += arr[i];
    s->sum = sum;
    cables_unlock(&s->l);
    return NULL;
}

static void *adder(void *p)
{
    struct shared *s = p;
    cables_barrier_wait(&s->b);
    cables_lock(&s->l);
    for (int i = 0; i < N; i++)
        s->published[i] += 1000;
    cables_unlock(&s->l);
    cables_barrier_wait(&s->b);
    return NULL;
}

static long recurse(int depth)
{
    volatile char pad[1024];
    memset((char *)pad, depth, sizeof pad);
    return depth == 0 ? pad[0] : pad[1] + recurse(depth - 1);
}

static void *deep(void *p)
{
    struct shared *s = p;
    cables_stats_t a, b;
    cables_stats_get(&a);
    long r = recurse(1000); /* about 1 MiB of frames */
    cables_stats_get(&b);
    cables_lock(&s->l);
    s->deep_faults = (long)(b.read_faults + b.write_faults - a.read_faults - a.write_faults);
    cables_unlock(&s->l);
    return (void *)r;
}

static void *nothing(void *p) { return p; }

/* 100 releases that write nothing shared; the gap keeps these frames off
 * the page of main's shared local */
static long idle_releases(struct shared *s)
{
    volatile char gap[3 * 4096];
    gap[0] = gap[sizeof gap - 1] = 0;
    cables_stats_t a, b;
    cables_stats_get(&a);
    for (int i = 0; i < 100; i++) {
        cables_lock(&s->l);
        cables_unlock(&s->l);
    }
    cables_stats_get(&b);
    return (long)(b.write_notices_made - a.write_notices_made) + gap[1];
}

int main(void)
{
    int last = cables_node_count() - 1, other = 0;
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    long local = 0;
    cables_thread_t t, u;
    if (cables_thread_create(&t, last, write_through, &local))
        return 2;
    cables_thread_join(t, NULL);

    if (cables_thread_create(&t, last, owner, s) || cables_thread_create(&u, other, adder, s))
        return 2;
    cables_thread_join(t, NULL);
    cables_thread_join(u, NULL);

    void *r;
    if (cables_thread_create(&t, last, deep, s))
        return 2;
    cables_thread_join(t, &r);

    int made = 0;
    for (int i = 0; i < 300; i++) {
        if (cables_thread_create(&t, last, nothing, (void *)(long)i))
            break;
        void *back;
        cables_thread_join(t, &back);
        made += (long)back == i;
    }
    long idle = idle_releases(s);
    long want = (long)N * (N - 1) / 2 + 1000L * N;
    cables_lock(&s->l);
    int ok = local == 4242 && s->sum == want && (long)r == recurse(1000) && s->deep_faults == 0 &&
             made == 300 && idle <= 2;
    printf("RESULT ok=%d main_local=%ld shared_sum=%ld want=%ld recursion=%d deep_faults=%ld "
           "threads=%d idle_notices=%ld\n", ok, local, s->sum, want, (long)r == recurse(1000),
           s->deep_faults, made, idle);
    cables_unlock(&s->l);
    return ok ? 0 : 1;
}
