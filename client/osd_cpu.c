/*
 * osd_cpu.c - what the OSD processes spend, asked of the sophon class (osd_cpu.h).
 */
#include "osd_cpu.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "wire.h"

/* One `cpu` call in flight: its completion and reply. */
struct ask {
    rados_completion_t c;
    char buf[2 * SOPHON_CPU_MSG_LEN];
    int rc;
    struct sophon_cpu_reply r;
};

/* Asks oids[0..k) at once into a[0..k): each a->rc is 0 with a->r, or a negative errno. */
static void ask_all(struct ask *a, rados_ioctx_t io, const char *const *oids, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        a[i].c = NULL;
        a[i].rc = rados_aio_create_completion2(NULL, NULL, &a[i].c);
        if (a[i].rc == 0)
            a[i].rc = rados_aio_exec(io, oids[i], a[i].c, "sophon", "cpu", NULL, 0, a[i].buf,
                                     sizeof(a[i].buf));
    }
    for (size_t i = 0; i < k; i++) {
        if (a[i].c == NULL)
            continue;
        if (a[i].rc == 0) {
            rados_aio_wait_for_complete(a[i].c);
            int n = rados_aio_get_return_value(a[i].c);
            a[i].rc = n < 0 ? n
                      : sophon_cpu_decode(&a[i].r, (const uint8_t *)a[i].buf, (size_t)n) < 0
                          ? -EPROTO
                          : 0;
        }
        rados_aio_release(a[i].c);
    }
}

int sophon__osds_find(struct sophon__osds *o, rados_ioctx_t io, const char *const *oids, size_t k)
{
    struct ask a[SOPHON__OSDS_ASK_AT_ONCE];
    int first = 0;
    if (o == NULL || (oids == NULL && k > 0))
        return -EINVAL;
    memset(o, 0, sizeof(*o));
    for (size_t done = 0; done < k;) {
        size_t m = k - done < SOPHON__OSDS_ASK_AT_ONCE ? k - done : SOPHON__OSDS_ASK_AT_ONCE;
        ask_all(a, io, oids + done, m);
        for (size_t i = 0; i < m; i++) {
            if (a[i].rc < 0) {
                if (first == 0)
                    first = a[i].rc;
                continue;
            }
            size_t j = 0;
            while (j < o->n && !(o->p[j].host == a[i].r.host && o->p[j].pid == a[i].r.pid))
                j++;
            if (j == o->n && o->n < SOPHON__MAX_OSDS)
                o->p[o->n++] = (struct sophon__osd_proc){a[i].r.host, a[i].r.pid, oids[done + i],
                                                         a[i].r.cpu_ns, a[i].r.clock_ns};
        }
        done += m;
    }
    return o->n > 0 ? (int)o->n : first < 0 ? first : -ENOENT;
}

int sophon__osds_sample(struct sophon__osds *o, rados_ioctx_t io, uint64_t *cpu_ns, double *span_s)
{
    struct ask a[SOPHON__MAX_OSDS];
    const char *oids[SOPHON__MAX_OSDS];
    int r = 0;
    if (o == NULL || cpu_ns == NULL || span_s == NULL || o->n == 0)
        return -EINVAL;
    for (size_t i = 0; i < o->n; i++)
        oids[i] = o->p[i].oid;
    ask_all(a, io, oids, o->n);
    *cpu_ns = 0;
    *span_s = 0;
    for (size_t i = 0; i < o->n; i++) {
        struct sophon__osd_proc *p = &o->p[i];
        if (a[i].rc < 0) {
            if (r == 0 || r == -ESTALE)
                r = a[i].rc;
            p->clock_ns = UINT64_MAX; /* its next answer starts again (below) */
            continue;
        }
        if (a[i].r.host != p->host || a[i].r.pid != p->pid || a[i].r.cpu_ns < p->cpu_ns ||
            a[i].r.clock_ns < p->clock_ns) {
            if (r == 0)
                r = -ESTALE;
        } else {
            *cpu_ns += a[i].r.cpu_ns - p->cpu_ns;
            *span_s = fmax(*span_s, (double)(a[i].r.clock_ns - p->clock_ns) / 1e9);
        }
        p->host = a[i].r.host;
        p->pid = a[i].r.pid;
        p->cpu_ns = a[i].r.cpu_ns;
        p->clock_ns = a[i].r.clock_ns;
    }
    return r;
}

double sophon__osd_op_estimate(double osd_s, double class_s, uint64_t ops, unsigned world)
{
    if (ops == 0 || world == 0 || !isfinite(osd_s) || !isfinite(class_s) || osd_s < 0 ||
        class_s < 0)
        return -1;
    return fmax(0.0, (osd_s / world - class_s) / (double)ops);
}
