/* config.c: the CABLES_* environment settings.  A bad value stops the
 * program with a message naming the setting, never a silent default.  And
 * which transports UCX_TLS names (UCX itself checks its values). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

void cb_die(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(buf, sizeof buf, "cables: ");
    n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    if (syscall(SYS_write, 2, buf, (size_t)n) < 0) { /* nothing more to do */ }
    _exit(2);
}

/* "64G", "4096", "1.5M" is refused: whole numbers with K/M/G/T (powers of 2). */
int cb_parse_size(const char *s, size_t *out)
{
    if (!s || *s < '0' || *s > '9') /* strtoull would take " -1" and "+5" */
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    }
    if (*end == 'i' && shift) end++;
    if ((*end == 'b' || *end == 'B') && shift) end++;
    if (*end)
        return -1;
    if (shift && v > (~0ull >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

int cb_parse_policy(const char *s, cables_policy_t *p, int *node)
{
    *node = 0;
    if (!strcmp(s, "first-touch")) *p = CABLES_POLICY_FIRST_TOUCH;
    else if (!strcmp(s, "round-robin")) *p = CABLES_POLICY_ROUND_ROBIN;
    else if (!strcmp(s, "block")) *p = CABLES_POLICY_BLOCK;
    else if (!strncmp(s, "fixed:", 6)) {
        char *end;
        if (s[6] < '0' || s[6] > '9')
            return -1;
        long n = strtol(s + 6, &end, 10);
        if (end == s + 6 || *end || n < 0 || n >= CB_MAX_NODES)
            return -1;
        *p = CABLES_POLICY_FIXED;
        *node = (int)n;
    } else
        return -1;
    return 0;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* a whole number in [lo, hi], nothing else */
static int whole(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (*s < '0' || *s > '9' || errno || *end || n < lo || n > hi)
        return -1;
    *out = (int)n;
    return 0;
}

/* a number of seconds in [lo, hi], nothing else */
static int seconds(const char *s, double lo, double hi, double *out)
{
    char *end;
    double t = strtod(s, &end);
    if (end == s || *end || !(t >= lo && t <= hi))
        return -1;
    *out = t;
    return 0;
}

/* one of two words: yes (true) or no (false), nothing else */
static int either(const char *s, const char *yes, const char *no, bool *out)
{
    if (strcmp(s, yes) && strcmp(s, no))
        return -1;
    *out = !strcmp(s, yes);
    return 0;
}

/* The address space a node may reserve: cables-run's limit
 * (CABLES_AS_LIMIT, the same for every node: ulimit -v) or this process's
 * (RLIMIT_AS); 0: none */
static uint64_t as_limit(void)
{
    const char *v = env("CABLES_AS_LIMIT");
    size_t n;
    if (v) {
        if (cb_parse_size(v, &n) || n == 0)
            cb_die("CABLES_AS_LIMIT='%s' is not a size (cables-run sets it: its ulimit -v)", v);
        return n;
    }
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) || r.rlim_cur == RLIM_INFINITY ? 0 : r.rlim_cur;
}

/* A node reserves three views of the GAS (the application's, the
 * protocol's, the twins'), the libraries' window and the rest of a
 * process (MPI, UCX, stacks: AS_REST), address space only, touched pages
 * alone take memory.  Under a limit of it (ulimit -v, as batch systems
 * set) the defaults (64G each) fit: the window an eighth of it (up to
 * 64G), the GAS a third of what is left (up to 64G).  Before, a run under
 * any limit below 260G failed to map the GAS. */
#define AS_REST (512ull << 20)
#define AS_MIN_GAS (128ull << 20)
static void fit_address_space(cb_config_t *c, bool gas_given)
{
    c->libs_size = 64ull << 30;
    uint64_t lim = as_limit();
    if (!lim)
        return;
    const uint64_t unit = 1u << 20;
    uint64_t budget = lim > AS_REST ? lim - AS_REST : 0;
    uint64_t libs = budget / 8 / unit * unit;
    c->libs_size = libs < c->libs_size ? libs : c->libs_size;
    uint64_t room = (budget - c->libs_size) / 3;
    if (!gas_given) {
        uint64_t gas = room / c->page_size * c->page_size;
        c->gas_size = gas < c->gas_size ? gas : c->gas_size;
    }
    if (c->gas_size < AS_MIN_GAS || c->gas_size > room)
        cb_die("the address space limit of %llu MiB (ulimit -v) leaves %llu MiB for the global "
               "address space (CABLES_GAS_SIZE%s%llu MiB; a node reserves three times it, %llu MiB "
               "for libraries and %llu MiB for the rest; at least %llu MiB): raise the limit%s",
               (unsigned long long)(lim >> 20), (unsigned long long)(room >> 20),
               gas_given ? " asks " : " would be ", (unsigned long long)(c->gas_size >> 20),
               (unsigned long long)(c->libs_size >> 20), (unsigned long long)(AS_REST >> 20),
               (unsigned long long)(AS_MIN_GAS >> 20), gas_given ? " or lower CABLES_GAS_SIZE" : "");
}

void cb_config_load(cb_config_t *c)
{
    const char *v;
    long os_page = sysconf(_SC_PAGESIZE);

    c->gas_size = 64ull << 30;
    if ((v = env("CABLES_GAS_SIZE"))) {
        if (cb_parse_size(v, &c->gas_size) || c->gas_size == 0)
            cb_die("CABLES_GAS_SIZE='%s' is not a size (expected a whole number with an "
                   "optional K, M, G or T suffix, e.g. 64G)", v);
        if (c->gas_size > (16ull << 40))
            cb_die("CABLES_GAS_SIZE='%s' is larger than the 16T the runtime can reserve", v);
    }
    c->page_size = (size_t)os_page;
    if ((v = env("CABLES_PAGE_SIZE"))) {
        if (cb_parse_size(v, &c->page_size) || c->page_size == 0 ||
            c->page_size % (size_t)os_page || c->page_size > (1u << 24))
            cb_die("CABLES_PAGE_SIZE='%s' is not a multiple of the OS page size %ld "
                   "(up to 16M)", v, os_page);
    }
    c->gas_size = (c->gas_size + c->page_size - 1) / c->page_size * c->page_size;
    fit_address_space(c, env("CABLES_GAS_SIZE") != NULL);
    c->stack_size = 8u << 20;
    if ((v = env("CABLES_STACK_SIZE"))) {
        if (cb_parse_size(v, &c->stack_size) || c->stack_size < (64u << 10) ||
            c->stack_size > (1ull << 32))
            cb_die("CABLES_STACK_SIZE='%s' is not a thread stack size (64K to 4G, e.g. 8M)", v);
    }
    c->stack_size = (c->stack_size + c->page_size - 1) / c->page_size * c->page_size;
    c->policy = CABLES_POLICY_FIRST_TOUCH;
    c->policy_node = 0;
    if ((v = env("CABLES_HOME_POLICY")) && cb_parse_policy(v, &c->policy, &c->policy_node))
        cb_die("CABLES_HOME_POLICY='%s' is not a home policy (expected first-touch, "
               "round-robin, block or fixed:NODE)", v);
    c->stats = false;
    if ((v = env("CABLES_STATS"))) {
        if (!strcmp(v, "1") || !strcmp(v, "yes")) c->stats = true;
        else if (strcmp(v, "0") && strcmp(v, "no"))
            cb_die("CABLES_STATS='%s' must be 1 or 0", v);
    }
    c->dead_timeout = 10.0; /* 3 s once took a node busy on a loaded VM for dead (bench/splash.sh) */
    if ((v = env("CABLES_DEAD_TIMEOUT")) && seconds(v, 0.5, 3600, &c->dead_timeout))
        cb_die("CABLES_DEAD_TIMEOUT='%s' must be a number of seconds in [0.5, 3600]", v);
    /* Open MPI 4.1 with PMIx 4 hangs in MPI_Comm_spawn at times (node.c) */
    c->attach_timeout = c->dead_timeout * 2 > 60 ? c->dead_timeout * 2 : 60;
    if ((v = env("CABLES_ATTACH_TIMEOUT")) && seconds(v, 1, 3600, &c->attach_timeout))
        cb_die("CABLES_ATTACH_TIMEOUT='%s' must be a number of seconds in [1, 3600]", v);
    c->poll_note = true;
    if ((v = env("CABLES_POLL_NOTE")) && either(v, "1", "0", &c->poll_note))
        cb_die("CABLES_POLL_NOTE='%s' must be 1 (a note when a thread that polls without "
               "synchronizing was shown writes) or 0", v);
    c->propagate = 0.25;
    if ((v = env("CABLES_PROPAGATE")) && (seconds(v, 0, 3600, &c->propagate) ||
                                          (c->propagate > 0 && c->propagate < 0.001)))
        cb_die("CABLES_PROPAGATE='%s' must be 0 (off) or a number of seconds in [0.001, 3600]", v);
    c->test_spawn_stall = -1;
    if ((v = env("CABLES_TEST_SPAWN_STALL")) && whole(v, 0, 3600, &c->test_spawn_stall))
        cb_die("CABLES_TEST_SPAWN_STALL='%s' must be a whole number of seconds from 0 (for "
               "ever) to 3600", v);
    c->test_env_drop_us = 0;
    if ((v = env("CABLES_TEST_ENV_DROP_US")) && whole(v, 0, 100000, &c->test_env_drop_us))
        cb_die("CABLES_TEST_ENV_DROP_US='%s' must be a whole number of microseconds from 0 to "
               "100000", v);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads_per_node = cores > 0 ? (int)cores : 1;
    if ((v = env("CABLES_THREADS_PER_NODE")) &&
        whole(v, 1, 1 << 20, &c->threads_per_node))
        cb_die("CABLES_THREADS_PER_NODE='%s' must be a whole number of threads from 1 to %d",
               v, 1 << 20);
    c->page_group = 16;
    if ((v = env("CABLES_PAGE_GROUP")) && whole(v, 1, CB_MAX_PAGE_GROUP, &c->page_group))
        cb_die("CABLES_PAGE_GROUP='%s' must be a whole number of pages from 1 to %d", v,
               CB_MAX_PAGE_GROUP);
    c->fetch_pages = c->page_group;
    if ((v = env("CABLES_FETCH_PAGES")) && whole(v, 1, CB_MAX_PAGE_GROUP, &c->fetch_pages))
        cb_die("CABLES_FETCH_PAGES='%s' must be a whole number of pages from 1 to %d (a read "
               "fault's fetch of copies brings up to that many)", v, CB_MAX_PAGE_GROUP);
    c->fetch_get = true;
    if ((v = env("CABLES_FETCH")) && either(v, "get", "msg", &c->fetch_get))
        cb_die("CABLES_FETCH='%s' must be get (read pages from the home in place where the "
               "transport can) or msg (always ask the home)", v);
    c->fetch_runs = 16;
    if ((v = env("CABLES_FETCH_RUNS")) && whole(v, 1, CB_MAX_FETCH_RUNS, &c->fetch_runs))
        cb_die("CABLES_FETCH_RUNS='%s' must be a whole number of runs from 1 (no strided "
               "prefetch) to %d", v, CB_MAX_FETCH_RUNS);
    c->refresh = 8;
    if ((v = env("CABLES_REFRESH")) && whole(v, 0, 255, &c->refresh))
        cb_die("CABLES_REFRESH='%s' must be a whole number of acquires from 0 (a copy named "
               "by a write notice is always invalidated) to 255", v);
    c->bind = true;
    if ((v = env("CABLES_BIND")) && either(v, "auto", "none", &c->bind))
        cb_die("CABLES_BIND='%s' must be auto (node processes sharing a machine each run on "
               "CPUs of their own when there are enough) or none (anywhere)", v);
    c->claim_local = true;
    if ((v = env("CABLES_CLAIM")) && either(v, "local", "directory", &c->claim_local))
        cb_die("CABLES_CLAIM='%s' must be local (a first touch homes the page at once and "
               "tells the directory after) or directory (it asks the directory first)", v);
    static const char *const ahead[] = { "off", "auto", "on" }; /* cb_config_t's order */
    c->store_ahead = 1;
    if ((v = env("CABLES_STORE_AHEAD"))) {
        c->store_ahead = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(v, ahead[i]))
                c->store_ahead = i;
        if (c->store_ahead < 0)
            cb_die("CABLES_STORE_AHEAD='%s' must be auto (where a node has a CPU to spare, a "
                   "thread allocates the store's pages ahead of a sweep), on (always) or off "
                   "(each page as it is touched)", v);
    }
    c->quiet = true;
    if ((v = env("CABLES_QUIET")) && either(v, "on", "off", &c->quiet))
        cb_die("CABLES_QUIET='%s' must be on (a home page noticed and not served since gets "
               "no notices for its writes) or off (every write noticed)", v);
    c->lazy_acks = true;
    if ((v = env("CABLES_DIFF_ACKS")) && either(v, "lazy", "wait", &c->lazy_acks))
        cb_die("CABLES_DIFF_ACKS='%s' must be lazy (a lock's release goes on while the homes "
               "apply its diffs; another node's take of the lock waits for them) or wait (every "
               "release waits for its diffs to be applied)", v);
    c->log_gc = 1 << 18;
    if ((v = env("CABLES_LOG_GC")) && whole(v, 0, 1 << 30, &c->log_gc))
        cb_die("CABLES_LOG_GC='%s' must be a whole number of write notices from 0 (the logs "
               "are never collected) to %d", v, 1 << 30);
    c->max_nodes = 0;
    if ((v = env("CABLES_MAX_NODES")) && whole(v, 1, CB_MAX_NODES, &c->max_nodes))
        cb_die("CABLES_MAX_NODES='%s' must be a whole number of nodes from 1 to %d", v,
               CB_MAX_NODES);
}

unsigned cb_ucx_tls_in(const char *const *set, unsigned *n, bool *except)
{
    const char *tls = getenv("UCX_TLS");
    char buf[256];
    *n = 0;
    *except = tls && tls[0] == '^';
    snprintf(buf, sizeof buf, "%s", tls ? tls + *except : "");
    unsigned in = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), ++*n)
        for (const char *const *s = set; *s; s++)
            if (!strcmp(t, *s)) {
                in++;
                break;
            }
    return in;
}
