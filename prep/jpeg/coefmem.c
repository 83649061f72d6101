/*
 * coefmem.c - libjpeg's whole-image coefficient arrays in their own mappings (coefmem.h).
 */
#include "coefmem.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <jerror.h>

#define HUGE_PAGE ((size_t)2 << 20)
/* Below this in all, the arrays come from libjpeg's pool. */
#define SMALL ((size_t)256 << 10)

/* jpeglib.h declares this type and leaves it to the memory manager: this is ours. */
struct jvirt_barray_control {
    JBLOCKARRAY rows;     /* Row pointers, once realized. */
    JDIMENSION nrows;     /* Rows in the array. */
    JDIMENSION blocks;    /* Blocks per row. */
    JDIMENSION maxaccess; /* Most rows accessed at once. */
    void *map;            /* The mapping of the arrays realized with it, and its length. */
    size_t maplen;
    struct jvirt_barray_control *next;
};

/*
 * Whether this process gets transparent huge pages where it asks (madvise): not where the kernel
 * has them off, nor in a process that turned them off for itself, as Ceph's daemons do (their
 * `thp` option, false by default: /proc/PID/status says THP_enabled: 0). There a mapping of its
 * own is a fault every 4 KB on every call, 880 a crop of a 1 MP image (14 ms of OSD CPU against
 * the heap's 4), while the heap hands back the blocks freed by the call before. The kernel's
 * setting is read once; the process's is asked each time (a system call, and a process may
 * change it).
 */
static int huge_pages(void)
{
    /* Read and written by every thread that decodes; any of them may be the first. */
    static _Atomic int kernel = -1;
    int k = atomic_load_explicit(&kernel, memory_order_relaxed);
#ifdef PR_GET_THP_DISABLE
    if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 0)
        return 0;
#endif
    if (k < 0) {
        char buf[128] = "";
        FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        if (f != NULL) {
            if (fgets(buf, sizeof(buf), f) == NULL)
                buf[0] = '\0';
            fclose(f);
        }
        k = strstr(buf, "[always]") != NULL || strstr(buf, "[madvise]") != NULL;
        atomic_store_explicit(&kernel, k, memory_order_relaxed);
    }
    return k;
}

static struct sophon__coefmem *state(j_common_ptr c)
{
    return c->client_data;
}

static jvirt_barray_ptr request(j_common_ptr c, int pool, boolean pre_zero, JDIMENSION blocks,
                                JDIMENSION nrows, JDIMENSION maxaccess)
{
    struct sophon__coefmem *m = state(c);
    struct jvirt_barray_control *a;

    /* Fresh mappings read as zero: every array is pre-zeroed, asked or not. */
    (void)pre_zero;
    if (pool != JPOOL_IMAGE)
        ERREXIT1(c, JERR_BAD_POOL_ID, pool);
    a = (*c->mem->alloc_small)(c, JPOOL_IMAGE, sizeof(*a));
    memset(a, 0, sizeof(*a));
    a->blocks = blocks;
    a->nrows = nrows;
    a->maxaccess = maxaccess;
    /* In the order asked for: the coefficient controller's are component by component. */
    *m->tail = a;
    m->tail = &a->next;
    return a;
}

static void realize(j_common_ptr c)
{
    struct sophon__coefmem *m = state(c);
    struct jvirt_barray_control *a;
    size_t total = 0, row, len = 0;
    uint8_t *base;
    void *map = NULL;
    JDIMENSION y;

    for (a = m->arrays; a != NULL; a = a->next) {
        if (a->rows != NULL)
            continue;
        row = (size_t)a->blocks * sizeof(JBLOCK);
        if (a->nrows != 0 && row > (SIZE_MAX - HUGE_PAGE) / 2 / a->nrows)
            ERREXIT1(c, JERR_OUT_OF_MEMORY, 11);
        total += row * a->nrows;
        if (total > SIZE_MAX / 2)
            ERREXIT1(c, JERR_OUT_OF_MEMORY, 11);
    }
    /* libjpeg would need backing store (which this build does not have) past the budget. */
    if (c->mem->max_memory_to_use != 0 && total > (size_t)c->mem->max_memory_to_use)
        ERREXIT(c, JERR_NO_BACKING_STORE);

    if (total == 0) {
        (*m->realize)(c);
        return;
    }
    if (total < SMALL) {
        /* Small: from the pool (malloc reuses freed memory, zeroing it is cheap). */
        base = (*c->mem->alloc_large)(c, JPOOL_IMAGE, total + 1);
        memset(base, 0, total);
    } else if (!huge_pages()) {
        /* No huge pages to be had: from the heap, which hands back what the call before freed
         * (calloc zeroes that, and leaves the fresh pages of a block it maps, zero already). */
        map = calloc(1, total);
        if (map == NULL)
            ERREXIT1(c, JERR_OUT_OF_MEMORY, 12);
        base = map;
    } else {
        /*
         * One mapping for them all, in whole huge pages (the untouched end of the last one
         * costs nothing), and a spare one to start on a huge-page boundary.
         */
        len = (total + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        map =
            mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED)
            ERREXIT1(c, JERR_OUT_OF_MEMORY, 12);
        base = (uint8_t *)map + (HUGE_PAGE - (uintptr_t)map % HUGE_PAGE) % HUGE_PAGE;
#ifdef MADV_HUGEPAGE
        (void)madvise(base, len, MADV_HUGEPAGE);
#endif
    }
    for (a = m->arrays; a != NULL; a = a->next) {
        if (a->rows != NULL)
            continue;
        /* The first array holds the mapping, to unmap (maplen 0: the heap's, to free). */
        if (map != NULL) {
            a->map = map;
            a->maplen = len > 0 ? len + HUGE_PAGE : 0;
            map = NULL;
        }
        row = (size_t)a->blocks * sizeof(JBLOCK);
        a->rows = (*c->mem->alloc_small)(c, JPOOL_IMAGE, (a->nrows + 1) * sizeof(JBLOCKROW));
        for (y = 0; y < a->nrows; y++)
            a->rows[y] = (JBLOCKROW)(void *)(base + y * row);
        base += row * a->nrows;
    }
    (*m->realize)(c); /* The sample arrays, if any. */
}

static JBLOCKARRAY access_rows(j_common_ptr c, jvirt_barray_ptr a, JDIMENSION start, JDIMENSION n,
                               boolean writable)
{
    (void)writable;
    if (a->rows == NULL || start > a->nrows || n > a->nrows - start || n > a->maxaccess)
        ERREXIT(c, JERR_BAD_VIRTUAL_ACCESS);
    return a->rows + start;
}

static void unmap_all(struct sophon__coefmem *m)
{
    struct jvirt_barray_control *a;

    for (a = m->arrays; a != NULL; a = a->next) {
        if (a->map != NULL && a->maplen == 0)
            free(a->map);
        else if (a->map != NULL)
            munmap(a->map, a->maplen);
    }
    m->arrays = NULL;
    m->tail = &m->arrays;
}

static void free_pool(j_common_ptr c, int pool)
{
    struct sophon__coefmem *m = state(c);

    if (pool == JPOOL_IMAGE)
        unmap_all(m);
    (*m->free_pool)(c, pool);
}

static void self_destruct(j_common_ptr c)
{
    struct sophon__coefmem *m = state(c);

    unmap_all(m);
    (*m->self_destruct)(c);
}

void sophon__coefmem_install(j_common_ptr c, struct sophon__coefmem *m)
{
    memset(m, 0, sizeof(*m));
    m->tail = &m->arrays;
    m->realize = c->mem->realize_virt_arrays;
    m->free_pool = c->mem->free_pool;
    m->self_destruct = c->mem->self_destruct;
    c->client_data = m;
    c->mem->request_virt_barray = request;
    c->mem->realize_virt_arrays = realize;
    c->mem->access_virt_barray = access_rows;
    c->mem->free_pool = free_pool;
    c->mem->self_destruct = self_destruct;
}

const JBLOCK *sophon__coefmem_array(const struct sophon__coefmem *m, int index, JDIMENSION *blocks,
                                    JDIMENSION *rows)
{
    const struct jvirt_barray_control *a = m->arrays;

    for (; a != NULL && index > 0; index--)
        a = a->next;
    if (a == NULL || a->rows == NULL || a->nrows == 0)
        return NULL;
    *blocks = a->blocks;
    *rows = a->nrows;
    return (const JBLOCK *)a->rows[0];
}
