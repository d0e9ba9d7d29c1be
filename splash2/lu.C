/* lu.C: SPLASH-2 style blocked LU factorization (contiguous blocks), written
 * for the SPLASH-2 M4 macro set.
 *
 * Dense LU without pivoting of an n x n matrix split into B x B blocks; every
 * block is stored contiguously (row-major inside the block) and the blocks
 * form one shared array.  Blocks are owned by threads in a 2-D scatter
 * (cookie-cutter) over a rows x cols grid of threads, rows*cols = P, rows
 * as close to the square root of P as divides P.  Right-looking loop over
 * the diagonal blocks k: the owner factors block (k,k); after a barrier the
 * owners of the perimeter blocks (row k, column k) update them with the
 * diagonal block; after a barrier the owners of the interior blocks update
 * them (A_ij -= A_ik * A_kj); a barrier ends the step.
 *
 * The input is deterministic and diagonally dominant (hashed values in
 * [0,1), plus n on the diagonal), so no pivoting is needed.  Each block is
 * always updated by one thread in one fixed order, so the factors, and
 * their checksum, depend on the arguments only, not on P or on the
 * machine layout.  Self-check: max |L*U - A| relative to max |A| must be
 * below 1e-10.
 *
 * Usage: lu [-n N] [-p P] [-b B]   (defaults 128, 1, 16)
 * Prints LU_RESIDUAL r and
 *   RESULT ok=1 n=N p=P b=B residual_ok=1 checksum=X */
MAIN_ENV
#include "args.h"
#include <math.h>

struct GlobalMemory {
    BARDEC(start)
} *Global;

long n = 128, P = 1, B = 16;
long nb;            /* blocks per row and per column */
long prows, pcols;  /* the thread grid */
double *blocks;     /* nb*nb blocks of B*B doubles, shared */

static double *blk(long I, long J) { return blocks + (I * nb + J) * B * B; }

static long owner(long I, long J) { return (I % prows) + (J % pcols) * prows; }

/* The input element (i,j): a hash of the position in [0,1), n added on the
 * diagonal. */
static double input_elem(long i, long j)
{
    unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ULL ^
                           ((unsigned long long)j + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 29;
    double v = (double)(x >> 11) / 9007199254740992.0; /* 2^53 */
    if (i == j)
        v += (double)n;
    return v;
}

/* Factor the diagonal block in place: unit lower L below, U on and above. */
static void lu0(double *a)
{
    for (long k = 0; k < B; k++) {
        double piv = a[k * B + k];
        for (long i = k + 1; i < B; i++) {
            double l = a[i * B + k] / piv;
            a[i * B + k] = l;
            for (long j = k + 1; j < B; j++)
                a[i * B + j] -= l * a[k * B + j];
        }
    }
}

/* Row perimeter block (k,J): solve L_kk X = A_kJ (L unit lower). */
static void bdiv_row(const double *d, double *a)
{
    for (long i = 1; i < B; i++)
        for (long r = 0; r < i; r++) {
            double l = d[i * B + r];
            for (long j = 0; j < B; j++)
                a[i * B + j] -= l * a[r * B + j];
        }
}

/* Column perimeter block (I,k): solve X U_kk = A_Ik (U upper). */
static void bdiv_col(const double *d, double *a)
{
    for (long i = 0; i < B; i++)
        for (long j = 0; j < B; j++) {
            double s = a[i * B + j];
            for (long r = 0; r < j; r++)
                s -= a[i * B + r] * d[r * B + j];
            a[i * B + j] = s / d[j * B + j];
        }
}

/* Interior block: c -= a * b. */
static void bmod(const double *a, const double *b, double *c)
{
    for (long i = 0; i < B; i++)
        for (long r = 0; r < B; r++) {
            double t = a[i * B + r];
            for (long j = 0; j < B; j++)
                c[i * B + j] -= t * b[r * B + j];
        }
}

void SlaveStart(void)
{
    long id;
    GET_PID(id)

    /* every thread fills its own blocks */
    for (long I = 0; I < nb; I++)
        for (long J = 0; J < nb; J++)
            if (owner(I, J) == id) {
                double *a = blk(I, J);
                for (long i = 0; i < B; i++)
                    for (long j = 0; j < B; j++)
                        a[i * B + j] = input_elem(I * B + i, J * B + j);
            }
    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    for (long k = 0; k < nb; k++) {
        double *d = blk(k, k);
        if (owner(k, k) == id)
            lu0(d);
        BARRIER(Global->start, P)
        for (long J = k + 1; J < nb; J++)
            if (owner(k, J) == id)
                bdiv_row(d, blk(k, J));
        for (long I = k + 1; I < nb; I++)
            if (owner(I, k) == id)
                bdiv_col(d, blk(I, k));
        BARRIER(Global->start, P)
        for (long I = k + 1; I < nb; I++)
            for (long J = k + 1; J < nb; J++)
                if (owner(I, J) == id)
                    bmod(blk(I, k), blk(k, J), blk(I, J));
        BARRIER(Global->start, P)
    }

    if (id == 0) {
        SPLASH3_ROI_END
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: lu [-n N] [-p P] [-b B]  (N a multiple of B, 1 <= P <= 64)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv,
               (const splash_arg_t[]){ { "-n", &n }, { "-p", &P }, { "-b", &B }, { 0 } });
    if (n < 1 || n > 16384 || B < 1 || B > n || n % B || P < 1 || P > 64)
        usage();
    nb = n / B;
    for (prows = 1; prows * prows <= P; prows++)
        ;
    for (prows--; P % prows; prows--)
        ;
    pcols = P / prows;

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    blocks = (double *)G_MALLOC((size_t)n * n * sizeof(double));
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    /* Check: the factors copied to private memory, L*U against the input,
     * kept as a private copy. */
    double *lu = malloc((size_t)n * n * sizeof(double));
    double *orig = malloc((size_t)n * n * sizeof(double));
    if (!lu || !orig) {
        fprintf(stderr, "lu: out of memory\n");
        exit(1);
    }
    double checksum = 0, maxa = 0, maxres = 0;
    for (long I = 0; I < nb; I++)
        for (long J = 0; J < nb; J++) {
            const double *a = blk(I, J);
            for (long i = 0; i < B; i++)
                for (long j = 0; j < B; j++)
                    lu[(I * B + i) * n + J * B + j] = a[i * B + j];
        }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            double v = input_elem(i, j);
            orig[i * n + j] = v;
            if (fabs(v) > maxa)
                maxa = fabs(v);
            checksum += lu[i * n + j];
        }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            long m = i < j ? i : j;
            double s = 0;
            for (long r = 0; r < m; r++)
                s += lu[i * n + r] * lu[r * n + j];
            s += i <= j ? lu[i * n + j] : lu[i * n + m] * lu[m * n + j];
            double e = fabs(s - orig[i * n + j]);
            if (e > maxres)
                maxres = e;
        }
    double rel = maxres / maxa;
    int res_ok = rel < 1e-10;
    printf("LU_RESIDUAL %.1e\n", rel);
    printf("RESULT ok=%d n=%ld p=%ld b=%ld residual_ok=%d checksum=%.10e\n", res_ok, n, P, B,
           res_ok, checksum);
    free(lu);
    free(orig);
    MAIN_END
}
