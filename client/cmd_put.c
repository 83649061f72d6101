/*
 * cmd_put.c - `sophon put`: stores JPEG files, or whole directories recursively, as objects
 * named by their path relative to the directory given, with many writes in flight.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dataset.h"
#include "progress.h"

#define MAX_FILE_BYTES (256u << 20)

static const char usage[] =
    "Usage: sophon put -p POOL [--dataset NAME] [--labels-from-dirs] [--jobs N] PATH...\n"
    "Stores JPEG files as objects. A directory is stored recursively, each object named by the\n"
    "file's path relative to it (train/n01/x.jpg given train/ is stored as n01/x.jpg); a file\n"
    "given by itself is stored under its base name. Files that are not JPEGs are reported and\n"
    "skipped. The objects are registered in the dataset's index (`sophon profile` reads it).\n\n"
    "      --dataset NAME      dataset to register the objects in (default: the pool's name)\n"
    "      --labels-from-dirs  record each object's class: the first directory of its name,\n"
    "                          as torchvision's ImageFolder (train/CLASS/x.jpg)\n"
    "      --jobs N            writes in flight (default 16)\n\n" CLI_COMMON_HELP;

struct file {
    char *path; /* on disk */
    char *name; /* object name */
    uint64_t size;
    int stored;
};

struct file_list {
    struct file *v;
    size_t n, cap;
};

/* nftw() has no user pointer: the walk in progress, one per process. */
static struct file_list *walk_list;
static size_t walk_root_len;

static int add_file(struct file_list *l, const char *path, const char *name, uint64_t size)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct file *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].path = strdup(path);
    l->v[l->n].name = strdup(name);
    l->v[l->n].size = size;
    if (l->v[l->n].path == NULL || l->v[l->n].name == NULL) {
        free(l->v[l->n].path);
        free(l->v[l->n].name);
        return -ENOMEM;
    }
    l->n++;
    return 0;
}

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    const char *name = path + walk_root_len;
    while (*name == '/')
        name++;
    return add_file(walk_list, path, name, (uint64_t)st->st_size) < 0 ? -1 : 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct file *)a)->name, ((const struct file *)b)->name);
}

static void free_list(struct file_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].path);
        free(l->v[i].name);
    }
    free(l->v);
}

/* JPEG files start with SOI and another marker: FF D8 FF. */
static int is_jpeg(const uint8_t *buf, size_t len)
{
    return len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff;
}

/*
 * Registers the stored files in the dataset's index, with their class (the first directory of
 * the object name) when labels is set.
 */
static int register_objects(struct cli *c, const char *dataset, const struct file_list *files,
                            int labels)
{
    struct sophon_index_entry *e = calloc(files->n ? files->n : 1, sizeof(*e));
    char **owned = calloc(files->n ? files->n : 1, sizeof(*owned));
    size_t n = 0, unlabelled = 0;
    int r = 0;
    if (e == NULL || owned == NULL) {
        r = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < files->n; i++) {
        const struct file *f = &files->v[i];
        if (!f->stored)
            continue;
        const char *slash = strchr(f->name, '/');
        if (labels && slash == NULL)
            unlabelled++;
        owned[n] =
            labels && slash != NULL ? strndup(f->name, (size_t)(slash - f->name)) : strdup("");
        if (owned[n] == NULL) {
            r = -ENOMEM;
            goto done;
        }
        e[n] = (struct sophon_index_entry){.name = f->name, .label = owned[n]};
        n++;
    }
    if (unlabelled > 0)
        fprintf(stderr,
                "sophon put: %zu object(s) have no directory in their name, hence no class: "
                "put a tree of CLASS/FILE.jpg\n",
                unlabelled);
    r = sophon__index_write(c->io, dataset, e, n);
done:
    for (size_t i = 0; owned != NULL && i < n; i++)
        free(owned[i]);
    free(owned);
    free(e);
    return r;
}

/* The writes of one run: a ring of `jobs` in flight, and what came of them. */
struct slot {
    rados_completion_t c;
    uint8_t *buf;
    size_t len;
    struct file *f;
};

struct put_run {
    struct cli *c;
    struct slot *slots;
    size_t jobs, head, inflight;
    struct progress pr;
    uint64_t stored, bytes, skipped, failed;
};

/* Waits for the oldest write in flight and counts it. */
static void finish_oldest(struct put_run *run)
{
    struct slot *s = &run->slots[run->head];
    struct cli *c = run->c;

    rados_aio_wait_for_complete(s->c);
    int r = rados_aio_get_return_value(s->c);
    rados_aio_release(s->c);
    free(s->buf);
    s->buf = NULL;
    run->head = (run->head + 1) % run->jobs;
    run->inflight--;
    if (r < 0) {
        if (run->pr.tty)
            fputs("\r\033[K", stderr);
        if (r == -EPERM || r == -EACCES)
            cli_error(c,
                      "writing %s to pool %s: permission denied: the key needs 'w' in its osd "
                      "caps for this pool",
                      s->f->name, c->pool);
        else
            cli_error(c, "writing %s failed: %s", s->f->name, strerror(-r));
        run->failed++;
        return;
    }
    s->f->stored = 1;
    run->stored++;
    run->bytes += s->len;
    progress_add(&run->pr, 1, s->len);
}

/* Reads file f; a file that cannot be read or is not a JPEG is reported and skipped (NULL). */
static uint8_t *read_jpeg(struct put_run *run, const struct file *f, size_t *len)
{
    uint8_t *buf = NULL;
    int r = cli_read_file(f->path, &buf, len, MAX_FILE_BYTES);

    if (r == 0 && is_jpeg(buf, *len))
        return buf;
    if (run->pr.tty)
        fputs("\r\033[K", stderr);
    if (r == -EFBIG)
        fprintf(stderr, "sophon put: skipped %s: larger than %u MiB\n", f->path,
                MAX_FILE_BYTES >> 20);
    else if (r < 0)
        fprintf(stderr, "sophon put: skipped %s: %s\n", f->path, strerror(-r));
    else
        fprintf(stderr, "sophon put: skipped %s: not a JPEG\n", f->path);
    if (r == 0)
        free(buf);
    run->skipped++;
    progress_add(&run->pr, 1, 0);
    return NULL;
}

/* Starts writing f's bytes buf[0..len) (the slot takes buf). */
static void start_write(struct put_run *run, struct file *f, uint8_t *buf, size_t len)
{
    struct slot *s;
    int r;

    if (run->inflight == run->jobs)
        finish_oldest(run);
    s = &run->slots[(run->head + run->inflight) % run->jobs];
    s->buf = buf;
    s->len = len;
    s->f = f;
    s->c = NULL;
    r = rados_aio_create_completion(NULL, NULL, NULL, &s->c);
    if (r == 0)
        r = rados_aio_write_full(run->c->io, f->name, s->c, (const char *)buf, len);
    if (r < 0) {
        cli_error(run->c, "cannot start writing %s: %s", f->name, strerror(-r));
        if (s->c != NULL)
            rados_aio_release(s->c);
        free(buf);
        s->buf = NULL;
        run->failed++;
        return;
    }
    run->inflight++;
}

/* Writes every file, jobs at a time, with a progress bar. Returns the seconds it took, or -1 if
 * nothing could be started (said why). */
static double store_files(struct put_run *run, struct file_list *files)
{
    run->slots = calloc(run->jobs, sizeof(*run->slots));
    if (run->slots == NULL) {
        cli_error(run->c, "out of memory");
        return -1;
    }
    progress_start(&run->pr, "put", files->n);
    for (size_t i = 0; i < files->n; i++) {
        size_t len;
        uint8_t *buf = read_jpeg(run, &files->v[i], &len);

        if (buf != NULL)
            start_write(run, &files->v[i], buf, len);
    }
    while (run->inflight > 0)
        finish_oldest(run);
    free(run->slots);
    run->slots = NULL;
    return progress_end(&run->pr);
}

/* The files the command line names: files as they are, directories walked; sorted by object
 * name. Returns 0 or -1 (said why). */
static int collect_files(struct cli *c, char **paths, int npaths, struct file_list *files)
{
    for (int i = 0; i < npaths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            cli_error(c, "cannot read %s: %s", paths[i], strerror(errno));
            return -1;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_list = files;
            walk_root_len = strlen(paths[i]);
            if (nftw(paths[i], walk_one, 32, FTW_PHYS) != 0) {
                cli_error(c, "cannot walk %s: %s", paths[i], strerror(errno));
                return -1;
            }
        } else {
            const char *base = strrchr(paths[i], '/');
            if (add_file(files, paths[i], base != NULL ? base + 1 : paths[i],
                         (uint64_t)st.st_size) < 0) {
                cli_error(c, "out of memory");
                return -1;
            }
        }
    }
    qsort(files->v, files->n, sizeof(files->v[0]), by_name);
    return 0;
}

static void report(const struct put_run *run, double secs)
{
    printf("stored %llu objects (%.1f MB) in pool %s in %.1f s (%.1f MB/s)",
           (unsigned long long)run->stored, (double)run->bytes / 1e6, run->c->pool, secs,
           secs > 0 ? (double)run->bytes / 1e6 / secs : 0.0);
    if (run->skipped > 0)
        printf(", skipped %llu file(s) that are not JPEGs", (unsigned long long)run->skipped);
    if (run->failed > 0)
        printf(", %llu write(s) FAILED", (unsigned long long)run->failed);
    putchar('\n');
}

enum { OPT_JOBS = CLI_OPT_FIRST_CMD, OPT_DATASET, OPT_LABELS };

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"labels-from-dirs", no_argument, NULL, OPT_LABELS},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for (the paths are argv[optind..argc)). */
struct put_args {
    struct cli c;
    const char *dataset;
    int labels;
    uint64_t jobs;
};

/* One option of sophon put's own: 1 handled, 0 not one of them, -1 invalid (said why). */
static int put_option(void *arg_, int opt, const char *arg)
{
    struct put_args *a = arg_;

    switch (opt) {
    case OPT_DATASET:
        a->dataset = arg;
        return 1;
    case OPT_LABELS:
        a->labels = 1;
        return 1;
    case OPT_JOBS:
        return cli_parse_range(&a->c, "--jobs", arg, 1, 1024, &a->jobs) < 0 ? -1 : 1;
    default:
        return 0;
    }
}

/* The command line into *a, checked. Returns 0, or -1 to exit with *code (0 after --help). */
static int parse_args(int argc, char **argv, struct put_args *a, int *code)
{
    memset(a, 0, sizeof(*a));
    a->c.prog = "sophon put";
    a->jobs = 16;
    if (cli_parse_options(&a->c, argc, argv, "", longopts, usage, put_option, a, code) < 0)
        return -1;
    if (optind == argc || a->c.pool == NULL) {
        cli_error(&a->c, "want a pool and files or directories: sophon put -p POOL PATH...");
        return -1;
    }
    if (a->dataset == NULL)
        a->dataset = a->c.pool;
    return 0;
}

/* "namespace 'NS'", or "the default namespace", into buf. */
static const char *namespace_name(char *buf, size_t len, const char *ns)
{
    if (ns[0] == '\0')
        snprintf(buf, len, "the default namespace");
    else
        snprintf(buf, len, "namespace '%s'", ns);
    return buf;
}

int cmd_put(int argc, char **argv)
{
    struct put_args a;
    struct file_list files = {0};
    struct put_run run;
    double secs;
    int code, r;

    if (parse_args(argc, argv, &a, &code) < 0)
        return code;
    code = 1;
    if (collect_files(&a.c, argv + optind, argc - optind, &files) < 0)
        goto done;
    if (cli_connect(&a.c) < 0)
        goto done;
    /* One dataset, one namespace: the loader reads its objects from one. */
    char ns[SOPHON_NAMESPACE_MAX], theirs[SOPHON_NAMESPACE_MAX + 16],
        these[SOPHON_NAMESPACE_MAX + 16];
    const char *mine = a.c.nspace != NULL ? a.c.nspace : "";
    if (sophon__index_namespace(a.c.io, a.dataset, ns) == 0 && strcmp(ns, mine) != 0) {
        cli_error(&a.c,
                  "dataset %s's objects are in %s, these would go to %s: put them with %s%s, or "
                  "into a dataset of their own (--dataset)",
                  a.dataset, namespace_name(theirs, sizeof(theirs), ns),
                  namespace_name(these, sizeof(these), mine), ns[0] ? "-N " : "no -N", ns);
        cli_disconnect(&a.c);
        goto done;
    }
    memset(&run, 0, sizeof(run));
    run.c = &a.c;
    run.jobs = a.jobs;
    secs = store_files(&run, &files);
    if (secs >= 0) {
        r = register_objects(&a.c, a.dataset, &files, a.labels);
        if (r == 0)
            r = sophon__index_write_namespace(a.c.io, a.dataset);
        if (r < 0) {
            cli_error(&a.c, "registering the objects in dataset %s failed: %s", a.dataset,
                      strerror(-r));
            run.failed++;
        }
        report(&run, secs);
        code = run.failed > 0 ? 1 : 0;
    }
    cli_disconnect(&a.c);
done:
    free_list(&files);
    return code;
}
