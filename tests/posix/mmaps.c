/* mmaps: memory mappings are the process's, whichever thread (on 2 nodes:
 * whichever node) made them.  Main and a worker take turns (gates):
 * - main's anonymous private mapping is read and written by the worker,
 *   and main sees the worker's writes; a shared one the worker made is
 *   read by main and unmapped by it;
 * - an allocator's aligned block (a mapping trimmed at both ends), made
 *   and unmapped 40 times, reads as zeros each time;
 * - a file main opened, mapped by the worker: privately (the file's bytes,
 *   zeros past its end, the worker's writes not in the file; at an
 *   offset), and shared writable (the worker's writes reach the file at
 *   msync and at munmap, and main reads them with pread; it syncs a later
 *   page of main's mapping too; the file keeps its size, and a pwrite to
 *   it where no mapping wrote since survives the munmaps);
 * - mremap grows a mapping keeping its bytes (zeros after), and shrinks
 *   it in place; madvise(MADV_DONTNEED) on private anonymous pages reads
 *   back zeros, on shared ones keeps them; a mapping is unmapped again
 *   (by the other thread), and whole after its head was; MAP_FIXED over a page of a mapping gives a page of zeros;
 *   mprotect to read-write succeeds; bad arguments give EINVAL.
 * With a path argument, main then maps that file shared writable, the
 * worker writes "written by the worker" at offset 100, and the program
 * ends without munmap or msync: the file has it afterwards (the test
 * reads it), as the kernel writes a mapping back after the process.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define ANON (4ul << 20)
#define FILE_LEN (3 * 4096 + 100)
#define MARK "written by the worker"

static struct gate to_worker = GATE_INITIALIZER, to_main = GATE_INITIALIZER;
static long *anon;
static unsigned char *wmap;
static char path[96];
static int fd;
static const char *exit_path;
static char *exit_map;
static char *main_map; /* main's shared writable mapping of the file */

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + 3); }

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void aligned_blocks(void)
{
    size_t align = 1ul << 20;
    int bad = 0;
    for (int k = 0; k < 40; k++) {
        unsigned char *p = mmap(NULL, 3 * align, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            bad++;
            continue;
        }
        unsigned char *q = (unsigned char *)(((uintptr_t)p + align - 1) & ~(align - 1));
        if (q > p && munmap(p, (size_t)(q - p)))
            bad++;
        if (munmap(q + align, (size_t)(p + 3 * align - (q + align))))
            bad++;
        if (!all_zero(q, align))
            bad++;
        memset(q, 0xa5, align);
        if (munmap(q, align))
            bad++;
    }
    CHECK_EQ("aligned_blocks_bad", bad, 0);
}

static void *worker(void *arg)
{
    (void)arg;
    /* 1: main's anonymous mapping */
    CHECK("w_gate_1", gate_wait(&to_worker, 1));
    long sum = 0;
    for (size_t i = 0; i < ANON / sizeof(long); i++)
        sum += anon[i];
    long n = (long)(ANON / sizeof(long));
    CHECK_EQ("w_anon_sum", sum, n * (n - 1) / 2);
    for (size_t i = 0; i < ANON / sizeof(long); i += 2)
        anon[i] = -anon[i];
    /* 2: a shared mapping of the worker's, for main */
    wmap = mmap(NULL, 1ul << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK("w_mmap_shared", wmap != MAP_FAILED);
    if (wmap != MAP_FAILED)
        for (size_t i = 0; i < (1ul << 20); i++)
            wmap[i] = pattern(i);
    gate_set(&to_main, 1);

    /* 3: aligned blocks */
    aligned_blocks();

    /* 4: main's file, mapped privately */
    CHECK("w_gate_2", gate_wait(&to_worker, 2));
    unsigned char *pm = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK("w_mmap_private", pm != MAP_FAILED);
    if (pm != MAP_FAILED) {
        int same = 1;
        for (size_t i = 0; i < FILE_LEN; i++)
            same &= pm[i] == pattern(i);
        CHECK("w_private_bytes", same);
        CHECK("w_private_past_end", all_zero(pm + FILE_LEN, 4 * 4096 - FILE_LEN));
        pm[5] = 'Z';
        unsigned char c = 0;
        CHECK_EQ("w_private_pread", pread(fd, &c, 1, 5), 1);
        CHECK_EQ("w_private_not_in_file", c, pattern(5));
        CHECK_EQ("w_private_munmap", munmap(pm, FILE_LEN), 0);
    }
    unsigned char *po = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 2 * 4096);
    CHECK("w_mmap_offset", po != MAP_FAILED);
    if (po != MAP_FAILED) {
        CHECK_EQ("w_offset_byte", po[17], pattern(2 * 4096 + 17));
        CHECK_EQ("w_offset_munmap", munmap(po, 4096), 0);
    }
    CHECK("w_mmap_offset_unaligned",
          mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED && errno == EINVAL);

    /* 5: shared writable: msync, then munmap */
    char *sm = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK("w_mmap_file_shared", sm != MAP_FAILED);
    if (sm != MAP_FAILED) {
        CHECK_EQ("w_shared_byte", (unsigned char)sm[4096 + 1], pattern(4096 + 1));
        memcpy(sm + 10, "worker-was", 10);
        CHECK_EQ("w_msync", msync(sm, FILE_LEN, MS_SYNC), 0);
    }
    if (main_map != MAP_FAILED) { /* a later page of main's mapping, synced from here */
        main_map[2 * 4096 + 7] = 'M';
        CHECK_EQ("w_msync_part", msync(main_map + 2 * 4096, 4096, MS_SYNC), 0);
    }
    CHECK_EQ("w_munmap_again", munmap(wmap, 1ul << 20), 0); /* main unmapped it */
    gate_set(&to_main, 2);
    CHECK("w_gate_3", gate_wait(&to_worker, 3));
    if (sm != MAP_FAILED) {
        sm[3 * 4096 + 50] = 'Q';
        CHECK_EQ("w_shared_munmap", munmap(sm, FILE_LEN), 0);
    }

    /* 6: mremap, madvise, MAP_FIXED, mprotect, bad arguments */
    unsigned char *r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("w_mmap_small", r != MAP_FAILED);
    if (r != MAP_FAILED) {
        for (size_t i = 0; i < 4096; i++)
            r[i] = pattern(i);
        unsigned char *g = mremap(r, 4096, 10 * 4096, MREMAP_MAYMOVE);
        CHECK("w_mremap_grow", g != MAP_FAILED);
        if (g != MAP_FAILED) {
            int same = 1;
            for (size_t i = 0; i < 4096; i++)
                same &= g[i] == pattern(i);
            CHECK("w_mremap_kept", same);
            CHECK("w_mremap_zeros", all_zero(g + 4096, 9 * 4096));
            memset(g, 1, 10 * 4096);
            CHECK_PTR("w_mremap_shrink", mremap(g, 10 * 4096, 2 * 4096, 0), g);
            CHECK_EQ("w_madvise", madvise(g, 2 * 4096, MADV_DONTNEED), 0);
            CHECK("w_madvise_zeros", all_zero(g, 2 * 4096));
            CHECK_EQ("w_mremap_munmap", munmap(g, 2 * 4096), 0);
        }
    }
    unsigned char *f = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    CHECK("w_mmap_four", f != MAP_FAILED);
    if (f != MAP_FAILED) {
        memset(f, 9, 4 * 4096);
        CHECK_PTR("w_map_fixed", mmap(f + 4096, 4096, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), f + 4096);
        CHECK("w_map_fixed_zeros", all_zero(f + 4096, 4096));
        CHECK("w_map_fixed_rest", f[0] == 9 && f[2 * 4096] == 9 && f[4 * 4096 - 1] == 9);
        CHECK_EQ("w_mprotect", mprotect(f, 4096, PROT_READ | PROT_WRITE), 0);
        CHECK_EQ("w_munmap_unaligned", munmap(f + 1, 4096), -1);
        CHECK_ERR("w_munmap_unaligned_errno", errno, EINVAL);
        CHECK_EQ("w_mmap_four_munmap", munmap(f, 4 * 4096), 0);
    }
    unsigned char *h = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
    CHECK("w_mmap_shared_anon", h != MAP_FAILED);
    if (h != MAP_FAILED) {
        h[4096] = 5;
        CHECK_EQ("w_madvise_shared", madvise(h + 4096, 4096, MADV_DONTNEED), 0);
        CHECK_EQ("w_madvise_shared_kept", h[4096], 5);
        CHECK_EQ("w_munmap_head", munmap(h, 4096), 0);
        CHECK_EQ("w_munmap_after_head", munmap(h, 4 * 4096), 0);
    }
    CHECK("w_mmap_zero_len",
          mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED &&
              errno == EINVAL);

    /* 7: the mapping main leaves for the exit */
    if (exit_path) {
        CHECK("w_gate_4", gate_wait(&to_worker, 4));
        memcpy(exit_map + 100, MARK, strlen(MARK));
    }
    gate_set(&to_main, 3);
    return NULL;
}

int main(int argc, char **argv)
{
    check_start();
    exit_path = argc > 1 ? argv[1] : NULL;
    anon = mmap(NULL, ANON, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("mmap_anon", anon != MAP_FAILED);
    if (anon == MAP_FAILED)
        return check_finish();
    for (size_t i = 0; i < ANON / sizeof(long); i++)
        anon[i] = (long)i;
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);

    /* 1, 2 */
    gate_set(&to_worker, 1);
    CHECK("gate_1", gate_wait(&to_main, 1));
    int flipped = 1;
    for (size_t i = 0; i < ANON / sizeof(long); i++)
        flipped &= anon[i] == (i % 2 ? (long)i : -(long)i);
    CHECK("anon_worker_writes", flipped);
    CHECK_EQ("anon_munmap", munmap(anon, ANON), 0);
    if (wmap != MAP_FAILED) {
        int same = 1;
        for (size_t i = 0; i < (1ul << 20); i++)
            same &= wmap[i] == pattern(i);
        CHECK("worker_mapping_bytes", same);
        CHECK_EQ("worker_mapping_munmap", munmap(wmap, 1ul << 20), 0);
    }

    /* 4, 5: the file */
    snprintf(path, sizeof path, "/tmp/cables-mmaps-XXXXXX");
    fd = mkstemp(path);
    CHECK_GE("mkstemp", fd, 0);
    unsigned char buf[FILE_LEN];
    for (size_t i = 0; i < FILE_LEN; i++)
        buf[i] = pattern(i);
    CHECK_EQ("file_write", write(fd, buf, FILE_LEN), FILE_LEN);
    main_map = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK("main_mmap_file", main_map != MAP_FAILED);
    gate_set(&to_worker, 2);
    CHECK("gate_2", gate_wait(&to_main, 2));
    char got[16] = { 0 };
    CHECK_EQ("msync_pread", pread(fd, got, 10, 10), 10);
    CHECK("msync_reached_file", memcmp(got, "worker-was", 10) == 0);
    CHECK_EQ("msync_part_pread", pread(fd, got, 1, 2 * 4096 + 7), 1);
    CHECK_EQ("msync_part_reached_file", got[0], 'M');
    struct stat st;
    CHECK_EQ("msync_fstat", fstat(fd, &st), 0);
    CHECK_EQ("msync_file_size", (long)st.st_size, FILE_LEN);
    /* a write to the file where no mapping wrote since: kept at munmap */
    CHECK_EQ("file_pwrite", pwrite(fd, "PW", 2, 2000), 2);
    gate_set(&to_worker, 3);

    /* 7 */
    int efd = -1;
    if (exit_path) {
        efd = open(exit_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        CHECK_GE("exit_open", efd, 0);
        CHECK_EQ("exit_truncate", ftruncate(efd, 2 * 4096), 0);
        exit_map = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, efd, 0);
        CHECK("exit_mmap", exit_map != MAP_FAILED);
        gate_set(&to_worker, 4);
    }
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    CHECK_EQ("munmap_pread", pread(fd, got, 1, 3 * 4096 + 50), 1);
    CHECK_EQ("munmap_reached_file", got[0], 'Q');
    if (main_map != MAP_FAILED)
        CHECK_EQ("main_munmap_file", munmap(main_map, FILE_LEN), 0);
    CHECK_EQ("pwrite_kept_pread", pread(fd, got, 2, 2000), 2);
    CHECK("pwrite_kept", memcmp(got, "PW", 2) == 0);
    CHECK_EQ("munmap_fstat", fstat(fd, &st), 0);
    CHECK_EQ("munmap_file_size", (long)st.st_size, FILE_LEN);
    close(fd);
    unlink(path);
    if (efd >= 0)
        close(efd); /* the mapping stays */
    return check_finish();
}
