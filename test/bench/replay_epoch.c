/*
 * replay_epoch - the loader's simulated epoch (client/simulate.h) replayed from what `sophon
 * load` wrote: its output (the stats lines: window, ring, link, cores, the CPU per operation)
 * and its --trace (each sample's position, stage, bytes and CPU, planned and measured). Per
 * epoch it prints the measured seconds, the loader's model, the simulation of the plan as
 * planned (which the model is, less the busiest resource's bound and the run's rounding) and of
 * the run as it went (each sample's measured CPU and bytes, its stage as run): what the
 * simulation's structure gets wrong apart from the costs it is given.
 *
 *     replay_epoch LOAD_OUTPUT TRACE.csv [--osds N] [--threads N] [--client-cores C]
 *                  [--read-threads N]
 *
 * The loader's options not in its output are the bench's (--threads 1 --client-cores 1) unless
 * given; --osds is the OSD processes the loader found (3 on the testbed); --read-threads the
 * simulation's (default the loader's, 5). Output: one line per epoch, then the mean |error| of
 * each column against the measured epochs. A rank of several (--shard) models its epoch no
 * shorter than the OSDs' time for the whole job's plan, which its own trace does not hold: its
 * replay can come out shorter than its model.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate.h"

#include "selector.h"

#define MAX_EPOCHS 64

struct epoch {
    int seen;
    double seconds, model_s, link_mbit, osd_cores, op_s;
    double msgr_byte_s; /* the client's messenger's CPU per byte as measured (0: not known) */
    int link_measured;
    unsigned window, prefetch;
};

struct row {
    size_t pos;
    unsigned long long index;
    int stored, planned_stored;
    double bytes, planned_bytes, osd_s, planned_osd_s, client_s, planned_client_s;
};

/* The value of key in a "stats: k=v k=v" line, NAN if absent. */
static double stat(const char *line, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = strstr(line, key); p != NULL; p = strstr(p + 1, key))
        if ((p == line || p[-1] == ' ') && p[kl] == '=')
            return atof(p + kl + 1);
    return NAN;
}

static int read_output(const char *path, struct epoch *ep, unsigned *batch, unsigned *world)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    if (f == NULL) {
        fprintf(stderr, "replay_epoch: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *b = strstr(line, "; shard ");
        unsigned rank, w, bs;
        if (b != NULL && sscanf(b, "; shard %u/%u, batch %u", &rank, &w, &bs) == 3) {
            *batch = bs;
            *world = w;
        }
        if (strncmp(line, "stats: ", 7) != 0)
            continue;
        double e = stat(line, "epoch");
        if (!(e >= 0 && e < MAX_EPOCHS))
            continue;
        struct epoch *x = &ep[(int)e];
        x->seen = 1;
        x->seconds = stat(line, "seconds");
        x->model_s = stat(line, "model_s");
        x->link_mbit = stat(line, "link_mbit");
        x->link_measured = stat(line, "link_measured") > 0;
        x->osd_cores = stat(line, "osd_cores");
        x->op_s = stat(line, "osd_op_ms") / 1e3;
        double msgr = stat(line, "msgr_cpu"), bytes = stat(line, "bytes");
        x->msgr_byte_s = msgr > 0 && bytes > 0 ? msgr / bytes : 0;
        x->window = (unsigned)stat(line, "window");
        x->prefetch = (unsigned)stat(line, "prefetch");
    }
    fclose(f);
    if (*batch == 0) {
        fprintf(stderr, "replay_epoch: %s has no \"shard R/W, batch B\" line\n", path);
        return -1;
    }
    return 0;
}

/* The trace's rows of epoch e, by position, into rows[0..*n). */
static int read_trace(const char *path, int e, struct row **rows, size_t *n)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    size_t cap = 0;
    *rows = NULL;
    *n = 0;
    if (f == NULL) {
        fprintf(stderr, "replay_epoch: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fgets(line, sizeof(line), f) == NULL || strncmp(line, "epoch,position,index,", 21) != 0) {
        fprintf(stderr, "replay_epoch: %s is not a `sophon load --trace` file\n", path);
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        /* epoch,position,index,planned,stage,demoted,ahead,retries,error,issued_s,completed_s,
         * ready_s,delivered_s,bytes,planned_bytes,planned_osd_s,osd_cpu_s,planned_client_s,
         * client_cpu_s,object: the first 19 fields (the object's name may hold commas). */
        char *fld[19], *p = line;
        int k = 0;
        for (; k < 19 && p != NULL; k++) {
            fld[k] = p;
            p = strchr(p, ',');
            if (p != NULL)
                *p++ = '\0';
        }
        if (k < 19 || atoi(fld[0]) != e)
            continue;
        size_t pos = strtoull(fld[1], NULL, 10);
        if (pos >= cap) {
            size_t nc = cap ? cap * 2 : 1024;
            while (nc <= pos)
                nc *= 2;
            struct row *r = realloc(*rows, nc * sizeof(*r));
            if (r == NULL) {
                fclose(f);
                return -1;
            }
            memset(r + cap, 0, (nc - cap) * sizeof(*r));
            *rows = r;
            cap = nc;
        }
        (*rows)[pos] = (struct row){
            .pos = pos,
            .index = strtoull(fld[2], NULL, 10),
            .planned_stored = strcmp(fld[3], "stored") == 0,
            .stored = strcmp(fld[4], "stored") == 0,
            .bytes = atof(fld[13]),
            .planned_bytes = atof(fld[14]),
            .planned_osd_s = atof(fld[15]),
            .osd_s = atof(fld[16]),
            .planned_client_s = atof(fld[17]),
            .client_s = atof(fld[18]),
        };
        if (pos + 1 > *n)
            *n = pos + 1;
    }
    fclose(f);
    return 0;
}

/* The epoch simulated with the planned figures (actual 0) or the measured ones (1); the busiest
 * resource's time into *bound. */
static double replay(const struct row *rows, size_t n, const struct epoch *x,
                     const struct sophon__sim_params *p, int actual, double *bound)
{
    struct sophon__sim_sample *s = calloc(n ? n : 1, sizeof(*s));
    double bytes = 0, osd = 0, client = 0;
    if (s == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        int stored = actual ? r->stored : r->planned_stored;
        /* A preparation's planned CPU holds the CPU per operation; its measured one is the
         * class's, without it. */
        double osd_s = stored ? x->op_s : actual ? r->osd_s + x->op_s : r->planned_osd_s;
        /* So does the client's (librados's); its measured one is the workers', without it. */
        double client_s = actual ? r->client_s + r->bytes * x->msgr_byte_s : r->planned_client_s;
        s[i] = (struct sophon__sim_sample){
            .bytes = actual ? r->bytes : r->planned_bytes,
            .osd_s = osd_s,
            .client_s = client_s,
            .ahead = !stored,
            .conn = sophon__sim_conn(r->index),
        };
        bytes += s[i].bytes;
        osd += s[i].osd_s;
        client += s[i].client_s;
    }
    *bound = fmax(bytes / p->rate_Bps, fmax(osd / p->osd_cores, client / p->client_cores));
    double t = sophon__sim_epoch(s, n, p);
    free(s);
    return fmax(t, *bound);
}

/* "(+12%)": ratio's distance from 1, in buf[16]. */
static const char *pct(char *buf, double ratio)
{
    snprintf(buf, 16, "(%+.0f%%)", 100 * (ratio - 1));
    return buf;
}

int main(int argc, char **argv)
{
    unsigned osds = 3, threads = 1, read_threads = SOPHON__OSD_OP_THREADS, batch = 0, world = 1;
    double client_cores = 1;
    const char *out_path = NULL, *trace_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--osds") == 0 && i + 1 < argc)
            osds = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--client-cores") == 0 && i + 1 < argc)
            client_cores = atof(argv[++i]);
        else if (strcmp(argv[i], "--read-threads") == 0 && i + 1 < argc)
            read_threads = (unsigned)atoi(argv[++i]);
        else if (out_path == NULL)
            out_path = argv[i];
        else if (trace_path == NULL)
            trace_path = argv[i];
        else
            out_path = NULL, i = argc;
    }
    if (out_path == NULL || trace_path == NULL || osds == 0 || threads == 0 ||
        !(client_cores > 0)) {
        fprintf(stderr, "usage: replay_epoch LOAD_OUTPUT TRACE.csv [--osds N] [--threads N] "
                        "[--client-cores C] [--read-threads N]\n");
        return 2;
    }
    static struct epoch ep[MAX_EPOCHS];
    if (read_output(out_path, ep, &batch, &world) < 0)
        return 1;
    double err[3] = {0};
    int counted = 0;
    printf("epoch  measured  model (loader)  replay, planned  replay, as run  busiest as run\n");
    for (int e = 0; e < MAX_EPOCHS; e++) {
        const struct epoch *x = &ep[e];
        struct row *rows;
        size_t n;
        if (!x->seen)
            continue;
        if (read_trace(trace_path, e, &rows, &n) < 0)
            return 1;
        double payload = x->link_measured ? 1.0 : SOPHON_SEL_LINK_PAYLOAD;
        struct sophon__sim_params p = {
            .rate_Bps = x->link_mbit * 1e6 / 8 * payload,
            .osd_cores = x->osd_cores / world,
            .client_cores = client_cores,
            .threads = threads,
            .batch = batch,
            .nbufs = x->prefetch + 1,
        };
        sophon__sim_shape(&p, x->window, osds, world);
        p.read_threads = read_threads;
        double bound, bound_run;
        double planned = replay(rows, n, x, &p, 0, &bound);
        double run = replay(rows, n, x, &p, 1, &bound_run);
        free(rows);
        if (!(planned > 0) || !(run > 0) || !(x->seconds > 0)) {
            fprintf(stderr, "replay_epoch: epoch %d cannot be replayed (%zu samples)\n", e, n);
            continue;
        }
        char a[16], b[16], r[16];
        printf("%5d  %8.3f  %7.3f %6s  %7.3f %6s  %7.3f %6s  %7.3f\n", e, x->seconds, x->model_s,
               pct(a, x->model_s / x->seconds), planned, pct(b, planned / x->seconds), run,
               pct(r, run / x->seconds), bound_run);
        err[0] += fabs(x->model_s / x->seconds - 1);
        err[1] += fabs(planned / x->seconds - 1);
        err[2] += fabs(run / x->seconds - 1);
        counted++;
    }
    if (counted == 0) {
        fprintf(stderr, "replay_epoch: no epoch in %s to replay\n", out_path);
        return 1;
    }
    printf("mean |error|: model %.1f%%, replay as planned %.1f%%, as run %.1f%% (%d epochs)\n",
           100 * err[0] / counted, 100 * err[1] / counted, 100 * err[2] / counted, counted);
    return 0;
}
