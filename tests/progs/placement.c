/* placement: pages of an allocation get the homes of a placement policy,
 * whoever touches them first (here a thread on the last node).
 * usage: placement env|api round-robin|block|fixed [NODE]
 *   env: cables_alloc(), the policy comes from cables-run -p / CABLES_HOME_POLICY
 *   api: cables_alloc_placed(policy, NODE)
 * RESULT ok=1 bad_homes=0 bad_data=0 pages=P homes=h0,h1,... */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shared { long *data; int npages; long bad_homes; };

static int expected(const char *pol, int node, int p, int np, int nn)
{
    if (!strcmp(pol, "round-robin")) return p % nn;
    if (!strcmp(pol, "block")) return p / (np / nn);
    return node < nn ? node : 0; /* fixed on a node that does not exist: the master */
}

static void *touch(void *arg)
{
    struct shared *s = arg;
    size_t w = cables_page_size() / sizeof(long);
    for (int p = 0; p < s->npages; p++)
        s->data[(size_t)p * w] = 1000 + p;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: placement env|api round-robin|block|fixed [NODE]\n");
        return 2;
    }
    const char *mode = argv[1], *pol = argv[2];
    int node = argc > 3 ? atoi(argv[3]) : 0, nn = cables_node_count(), np = 8 * nn;
    size_t ps = cables_page_size(), w = ps / sizeof(long);
    cables_policy_t p = !strcmp(pol, "round-robin") ? CABLES_POLICY_ROUND_ROBIN
                      : !strcmp(pol, "block")       ? CABLES_POLICY_BLOCK
                                                    : CABLES_POLICY_FIXED;
    struct shared *s = cables_alloc(sizeof *s);
    s->npages = np;
    s->data = !strcmp(mode, "api") ? cables_alloc_placed((size_t)np * ps, p, node)
                                   : cables_alloc((size_t)np * ps);
    if (!s->data) {
        printf("RESULT ok=0 error=alloc_failed\n");
        return 1;
    }
    cables_thread_t t;
    cables_thread_create(&t, nn - 1, touch, s);
    cables_thread_join(t, NULL);
    long bad_homes = 0, bad_data = 0;
    char homes[512] = "";
    for (int q = 0; q < np; q++) {
        int h = cables_home_of(s->data + (size_t)q * w);
        if (h != expected(pol, node, q, np, nn))
            bad_homes++;
        if (s->data[(size_t)q * w] != 1000 + q)
            bad_data++;
        snprintf(homes + strlen(homes), sizeof homes - strlen(homes), "%s%d", q ? "," : "", h);
    }
    int ok = bad_homes == 0 && bad_data == 0;
    printf("RESULT ok=%d bad_homes=%ld bad_data=%ld pages=%d homes=%s\n", ok, bad_homes,
           bad_data, np, homes);
    return ok ? 0 : 1;
}
