/*
 * simulate.c - an epoch as the loader runs it, simulated (simulate.h).
 */
#include "simulate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "control.h"

/* Work left below this many seconds is done (the sums of many small steps round). */
#define DONE_S 1e-12
/* A response with fewer bytes than this left has crossed the link. */
#define DONE_BYTES 1e-6

/*
 * Processor sharing: the operations in a pool share its cores, at most one core each. In the
 * OSDs' pool only the preparations do; the plain reads wait in one queue and are served in
 * order, the head one with the share of the threads serving the queue (read_threads, at most
 * the reads queued) beside the preparations'. An OSD reads an object in a fraction of a
 * millisecond on one of its few op threads: sharing the cores among all the reads in flight
 * would keep each of them for as long as all of them take (a window of 256 reads at 0.1 cores,
 * 0.3 ms each, would send the first after 0.77 s), which the OSDs do not. Nor does the queue get
 * only one preparation's share: its reads run on several op threads at once, and the kernel runs
 * a thread that wakes for a short read before those that have run for milliseconds. On the
 * testbed at 500Mbit and 0.25 cores a read crossed the link every 3 ms from the epoch's start
 * while 8 preparations ran; with one preparation's share it took 20 ms, and sophon's rule's plan
 * on the OI-like objects was modelled 1.91-1.96 s against 1.61-1.68 s measured (1.63-1.66 s with
 * 5 threads' share). Reads before all the preparations overshoot where these are many and small
 * under a tight cap: on the main job's photos at 500Mbit and 0.1 cores selective's plan of 48
 * small f32 preparations ran 1.83 s and was modelled 1.24 s so (1.71 s with 5 threads' share).
 * Over 180 epochs of both datasets (50/200/500Mbit x 0.1/0.25/1.0 cores, five policies, each
 * replayed from the loader's trace by test/bench/replay_epoch) the model's mean error was 5.4%
 * with one preparation's share, 5.0% with the reads first and 4.6% with 5 threads' (epochs
 * after the first: 3.8%, 3.2%, 2.9%; outside 10%: 7, 4 and 1 of 90).
 */
struct pool {
    double cores;
    size_t k;                     /* preparations in the pool */
    size_t *pos;                  /* their positions */
    double *left;                 /* per position: seconds of work left on one core */
    size_t *rq, rq_head, rq_tail; /* reads, in order; the head one is served (NULL: none) */
    size_t most;                  /* preparations served at once (the op threads, or the window) */
    size_t read_threads;          /* threads serving the reads (0: the head read first) */
    size_t *pq, pq_head, pq_tail; /* the preparations waiting for one of those places */
};

static int reading(const struct pool *pl)
{
    return pl->rq_head < pl->rq_tail;
}

/* The cores the head read has: the share of the threads serving the queue (at most its length)
 * among them and the preparations, or all of them before the preparations; up to one. */
static double read_rate(const struct pool *pl)
{
    if (!reading(pl))
        return 0;
    double w = (double)(pl->rq_tail - pl->rq_head);
    if (pl->read_threads > 0 && w > (double)pl->read_threads)
        w = (double)pl->read_threads;
    return fmin(1.0, pl->read_threads > 0 ? pl->cores * w / (w + (double)pl->k) : pl->cores);
}

/* Each preparation's cores: what the read leaves, shared, at most one each. */
static double pool_rate(const struct pool *pl)
{
    double left = pl->cores - read_rate(pl);
    return pl->k == 0 || left <= 0 ? 0 : fmin(1.0, left / (double)pl->k);
}

/* Seconds until work of `left` seconds at `rate` cores is done. */
static double until_done(double left, double rate)
{
    return left <= DONE_S ? 0 : rate > 0 ? left / rate : INFINITY;
}

/* Seconds until the pool's next operation is done, INFINITY if none can be. */
static double pool_next(const struct pool *pl)
{
    double least = INFINITY, rate = pool_rate(pl);
    for (size_t i = 0; i < pl->k; i++)
        least = fmin(least, until_done(pl->left[pl->pos[i]], rate));
    if (reading(pl))
        least = fmin(least, until_done(pl->left[pl->rq[pl->rq_head]], read_rate(pl)));
    return least;
}

/* Runs the pool for dt seconds; the operations done leave it, into done[] (returns how many). */
static size_t pool_advance(struct pool *pl, double dt, size_t *done)
{
    double step = dt * pool_rate(pl), read_step = dt * read_rate(pl);
    size_t nd = 0, kept = 0;
    for (size_t i = 0; i < pl->k; i++) {
        size_t q = pl->pos[i];
        pl->left[q] -= step;
        if (pl->left[q] <= DONE_S)
            done[nd++] = q;
        else
            pl->pos[kept++] = q;
    }
    pl->k = kept;
    while (pl->pq_head < pl->pq_tail && pl->k < pl->most)
        pl->pos[pl->k++] = pl->pq[pl->pq_head++];
    if (reading(pl)) {
        size_t q = pl->rq[pl->rq_head];
        pl->left[q] -= read_step;
        if (pl->left[q] <= DONE_S) {
            done[nd++] = q;
            pl->rq_head++;
        }
    }
    return nd;
}

/*
 * The link: one connection per OSD, each carrying its responses one after another in the order
 * they were ready, the link's rate shared equally among the connections with a response on them
 * (TCP's fair share). While a 16 MB photo crosses a 500 Mbit/s link (0.27 s alone, 0.7 s beside
 * the other two OSDs' connections of the testbed), the other connections' small responses keep
 * coming and the workers keep working; one queue for the whole link had them wait behind it.
 */
struct link {
    size_t conns;
    size_t *cur;         /* per connection: the position on it, n: none */
    double *left;        /* per connection: its bytes left */
    size_t *head, *tail; /* per connection: its queue, linked through next[] (n: empty) */
    size_t *next;        /* per position */
    size_t *act, busy;   /* the connections with a position on them */
};

struct sim {
    const struct sophon__sim_sample *s;
    size_t n, nb, *batch_left;
    struct pool osd, client;
    struct link link;
    size_t *client_q, client_head, client_tail;
    size_t *done;
    unsigned char *early; /* per position: issued ahead of its turn */
};

static void sim_free(struct sim *sm)
{
    free(sm->batch_left);
    free(sm->osd.pos);
    free(sm->osd.left);
    free(sm->osd.rq);
    free(sm->osd.pq);
    free(sm->client.pos);
    free(sm->client.left);
    free(sm->link.cur);
    free(sm->link.left);
    free(sm->link.head);
    free(sm->link.tail);
    free(sm->link.next);
    free(sm->link.act);
    free(sm->client_q);
    free(sm->done);
    free(sm->early);
}

static int sim_alloc(struct sim *sm, const struct sophon__sim_sample *s, size_t n,
                     const struct sophon__sim_params *p)
{
    *sm = (struct sim){.s = s, .n = n, .nb = (n + p->batch - 1) / p->batch};
    sm->batch_left = malloc(sm->nb * sizeof(*sm->batch_left));
    sm->osd = (struct pool){.cores = p->osd_cores,
                            .pos = malloc(p->window * sizeof(size_t)),
                            .left = malloc(n * sizeof(double)),
                            .rq = malloc(n * sizeof(size_t)),
                            .most = p->osd_threads > 0 ? p->osd_threads : p->window,
                            .read_threads = p->read_threads,
                            .pq = malloc(n * sizeof(size_t))};
    sm->client = (struct pool){.cores = p->client_cores,
                               .pos = malloc(p->threads * sizeof(size_t)),
                               .left = malloc(n * sizeof(double))};
    size_t conns = p->conns > 0 ? p->conns : 1;
    sm->link = (struct link){.conns = conns,
                             .cur = malloc(conns * sizeof(size_t)),
                             .left = malloc(conns * sizeof(double)),
                             .head = malloc(conns * sizeof(size_t)),
                             .tail = malloc(conns * sizeof(size_t)),
                             .next = malloc(n * sizeof(size_t)),
                             .act = malloc(conns * sizeof(size_t))};
    sm->client_q = malloc(n * sizeof(size_t));
    sm->done = malloc(((p->window > p->threads ? p->window : p->threads) + 1) * sizeof(size_t));
    sm->early = calloc(n, 1);
    if (!sm->batch_left || !sm->osd.pos || !sm->osd.left || !sm->osd.rq || !sm->osd.pq ||
        !sm->client.pos || !sm->client.left || !sm->link.cur || !sm->link.left || !sm->link.head ||
        !sm->link.tail || !sm->link.next || !sm->link.act || !sm->client_q || !sm->done ||
        !sm->early) {
        sim_free(sm);
        return -ENOMEM;
    }
    for (size_t c = 0; c < conns; c++)
        sm->link.cur[c] = sm->link.head[c] = sm->link.tail[c] = n;
    for (size_t b = 0; b < sm->nb; b++)
        sm->batch_left[b] = b + 1 < sm->nb ? p->batch : n - b * p->batch;
    return 0;
}

/* Position q is ready for the link: on its connection if that is free, else in its queue. */
static void link_add(struct sim *sm, size_t q)
{
    struct link *lk = &sm->link;
    size_t c = sm->s[q].conn % lk->conns;
    if (lk->cur[c] == sm->n) {
        lk->cur[c] = q;
        lk->left[c] = sm->s[q].bytes > 0 ? sm->s[q].bytes : 0;
        lk->act[lk->busy++] = c;
        return;
    }
    lk->next[q] = sm->n;
    if (lk->head[c] == sm->n)
        lk->head[c] = q;
    else
        lk->next[lk->tail[c]] = q;
    lk->tail[c] = q;
}

/* Seconds until the link's next response has crossed it, INFINITY if none can. */
static double link_next(const struct sim *sm, double rate_Bps)
{
    const struct link *lk = &sm->link;
    double least = INFINITY;
    for (size_t i = 0; i < lk->busy; i++)
        least = fmin(least, lk->left[lk->act[i]]);
    if (isinf(least) || least <= DONE_BYTES)
        return isinf(least) ? INFINITY : 0;
    return rate_Bps > 0 ? least / (rate_Bps / (double)lk->busy) : INFINITY;
}

/* Runs the link for dt seconds; the responses that have crossed it leave it, into done[]
 * (returns how many), and their connections take the next of their queues. */
static size_t link_advance(struct sim *sm, double dt, double rate_Bps, size_t *done)
{
    struct link *lk = &sm->link;
    double step = lk->busy > 0 && rate_Bps > 0 ? dt * rate_Bps / (double)lk->busy : 0;
    size_t nd = 0, kept = 0;
    for (size_t i = 0; i < lk->busy; i++) {
        size_t c = lk->act[i], q = lk->cur[c];
        if ((lk->left[c] -= step) > DONE_BYTES) {
            lk->act[kept++] = c;
            continue;
        }
        done[nd++] = q;
        q = lk->cur[c] = lk->head[c];
        if (q < sm->n) {
            lk->head[c] = lk->next[q];
            lk->left[c] = sm->s[q].bytes > 0 ? sm->s[q].bytes : 0;
            lk->act[kept++] = c;
        }
    }
    lk->busy = kept;
    return nd;
}

/* Starts position q: in the OSDs if it has OSD work (a preparation among those sharing the cores,
 * a read in the reads' queue), else straight to the link (link_add). */
static void issue(struct sim *sm, size_t q)
{
    if (sm->s[q].osd_s > 0) {
        sm->osd.left[q] = sm->s[q].osd_s;
        if (sm->s[q].ahead && sm->osd.k < sm->osd.most)
            sm->osd.pos[sm->osd.k++] = q;
        else if (sm->s[q].ahead)
            sm->osd.pq[sm->osd.pq_tail++] = q;
        else
            sm->osd.rq[sm->osd.rq_tail++] = q;
    } else {
        link_add(sm, q);
    }
}

double sophon__sim_epoch(const struct sophon__sim_sample *samples, size_t n,
                         const struct sophon__sim_params *p)
{
    if (!p || (n > 0 && !samples) || p->batch == 0 || p->nbufs == 0 || p->window <= p->ahead ||
        p->threads == 0 || isnan(p->rate_Bps) || isnan(p->osd_cores) || isnan(p->client_cores))
        return -EINVAL;
    if (n == 0)
        return 0;
    struct sim sm;
    if (sim_alloc(&sm, samples, n, p) < 0)
        return -ENOMEM;
    size_t next = 0, head = 0, inflight = 0;
    size_t ahead_next = 0, ahead_inflight = 0;
    double t = 0;
    for (;;) {
        /* Issue, in order, within the window's places but the ahead ones and the ring (past
         * those issued ahead); then in those places, ahead of their turn, the next
         * preparations the ring holds. */
        while (next < n && (inflight < p->window - p->ahead || sm.early[next]) &&
               next / p->batch < head + p->nbufs) {
            size_t q = next++;
            if (sm.early[q])
                continue;
            inflight++;
            issue(&sm, q);
        }
        size_t ring_end = (head + p->nbufs) * p->batch < n ? (head + p->nbufs) * p->batch : n;
        if (ahead_next < next)
            ahead_next = next;
        while (ahead_inflight < p->ahead && ahead_next < ring_end) {
            size_t q = ahead_next++;
            if (!samples[q].ahead || !(samples[q].osd_s > 0))
                continue;
            sm.early[q] = 1;
            ahead_inflight++;
            issue(&sm, q);
        }
        while (sm.client.k < p->threads && sm.client_head < sm.client_tail) {
            size_t q = sm.client_q[sm.client_head++];
            sm.client.left[q] = samples[q].client_s > 0 ? samples[q].client_s : 0;
            sm.client.pos[sm.client.k++] = q;
        }
        if (head == sm.nb)
            break;
        /* The next event. */
        double dt =
            fmin(fmin(pool_next(&sm.osd), pool_next(&sm.client)), link_next(&sm, p->rate_Bps));
        if (isinf(dt)) {
            t = INFINITY; /* work that no resource can do */
            break;
        }
        t += dt;
        /* The link first: what the OSDs finish now starts on it from now. */
        size_t nd = link_advance(&sm, dt, p->rate_Bps, sm.done);
        for (size_t i = 0; i < nd; i++) {
            size_t q = sm.done[i];
            sm.client_q[sm.client_tail++] = q;
            if (sm.early[q])
                ahead_inflight--;
            else
                inflight--;
        }
        nd = pool_advance(&sm.osd, dt, sm.done);
        for (size_t i = 0; i < nd; i++)
            link_add(&sm, sm.done[i]);
        nd = pool_advance(&sm.client, dt, sm.done);
        for (size_t i = 0; i < nd; i++)
            sm.batch_left[sm.done[i] / p->batch]--;
        while (head < sm.nb && sm.batch_left[head] == 0)
            head++;
    }
    sim_free(&sm);
    return t;
}

void sophon__sim_shape(struct sophon__sim_params *p, unsigned window, size_t osds, unsigned world)
{
    p->window = window;
    p->ahead = sophon__ahead_places(window);
    p->osd_threads =
        osds > 0 ? (unsigned)fmax(1, floor((double)osds * SOPHON__OSD_OP_THREADS / world)) : 0;
    p->read_threads = SOPHON__OSD_OP_THREADS;
    /* One connection per OSD, each carrying its responses one after another; no more busy at once
     * than there are operations in flight. */
    p->conns = osds > 0 ? (unsigned)(osds < window ? osds : window) : 1;
}
