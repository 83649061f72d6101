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

struct slot {
    rados_completion_t c;
    uint8_t *buf;
    size_t len;
    struct file *f;
};

static int finish(struct cli *c, struct slot *s, struct progress *pr, uint64_t *stored,
                  uint64_t *bytes)
{
    rados_aio_wait_for_complete(s->c);
    int r = rados_aio_get_return_value(s->c);
    rados_aio_release(s->c);
    free(s->buf);
    s->buf = NULL;
    if (r < 0) {
        if (pr->tty)
            fputs("\r\033[K", stderr);
        if (r == -EPERM || r == -EACCES)
            cli_error(c,
                      "writing %s to pool %s: permission denied: the key needs 'w' in its osd "
                      "caps for this pool",
                      s->f->name, c->pool);
        else
            cli_error(c, "writing %s failed: %s", s->f->name, strerror(-r));
        return r;
    }
    s->f->stored = 1;
    (*stored)++;
    *bytes += s->len;
    progress_add(pr, 1, s->len);
    return 0;
}

int cmd_put(int argc, char **argv)
{
    enum { OPT_JOBS = CLI_OPT_FIRST_CMD, OPT_DATASET, OPT_LABELS };
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS,
                                             {"jobs", required_argument, NULL, OPT_JOBS},
                                             {"dataset", required_argument, NULL, OPT_DATASET},
                                             {"labels-from-dirs", no_argument, NULL, OPT_LABELS},
                                             {NULL, 0, NULL, 0}};
    const char *dataset = NULL;
    int labels = 0;
    struct cli c = {.prog = "sophon put"};
    struct file_list files = {0};
    struct progress pr;
    uint64_t jobs = 16, stored = 0, bytes = 0, skipped = 0, failed = 0;
    int opt, r, code = 1;

    while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage, stdout);
            return 0;
        }
        if (opt == OPT_DATASET) {
            dataset = optarg;
            continue;
        }
        if (opt == OPT_LABELS) {
            labels = 1;
            continue;
        }
        if (opt == OPT_JOBS) {
            if (cli_parse_range(&c, "--jobs", optarg, 1, 1024, &jobs) < 0)
                return 2;
            continue;
        }
        if (cli_common_or_usage(&c, opt, optarg, usage) < 0)
            return 2;
    }
    if (optind == argc || c.pool == NULL) {
        cli_error(&c, "want a pool and files or directories: sophon put -p POOL PATH...");
        return 2;
    }
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            cli_error(&c, "cannot read %s: %s", argv[i], strerror(errno));
            goto done;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_list = &files;
            walk_root_len = strlen(argv[i]);
            if (nftw(argv[i], walk_one, 32, FTW_PHYS) != 0) {
                cli_error(&c, "cannot walk %s: %s", argv[i], strerror(errno));
                goto done;
            }
        } else {
            const char *base = strrchr(argv[i], '/');
            if (add_file(&files, argv[i], base != NULL ? base + 1 : argv[i], (uint64_t)st.st_size) <
                0) {
                cli_error(&c, "out of memory");
                goto done;
            }
        }
    }
    qsort(files.v, files.n, sizeof(files.v[0]), by_name);
    if (cli_connect(&c) < 0)
        goto done;

    struct slot *slots = calloc(jobs, sizeof(*slots));
    if (slots == NULL) {
        cli_error(&c, "out of memory");
        goto disconnect;
    }
    progress_start(&pr, "put", files.n);
    size_t head = 0, inflight = 0;
    for (size_t i = 0; i < files.n; i++) {
        struct file *f = &files.v[i];
        uint8_t *buf;
        size_t len;
        r = cli_read_file(f->path, &buf, &len, MAX_FILE_BYTES);
        if (r < 0 || !is_jpeg(buf, len)) {
            if (pr.tty)
                fputs("\r\033[K", stderr);
            if (r < 0)
                fprintf(stderr, "sophon put: skipped %s: %s\n", f->path,
                        r == -EFBIG ? "larger than 256 MiB" : strerror(-r));
            else
                fprintf(stderr, "sophon put: skipped %s: not a JPEG\n", f->path);
            if (r == 0)
                free(buf);
            skipped++;
            progress_add(&pr, 1, 0);
            continue;
        }
        if (inflight == jobs) {
            if (finish(&c, &slots[head], &pr, &stored, &bytes) < 0)
                failed++;
            head = (head + 1) % jobs;
            inflight--;
        }
        struct slot *s = &slots[(head + inflight) % jobs];
        s->buf = buf;
        s->len = len;
        s->f = f;
        r = rados_aio_create_completion(NULL, NULL, NULL, &s->c);
        if (r == 0)
            r = rados_aio_write_full(c.io, f->name, s->c, (const char *)buf, len);
        if (r < 0) {
            cli_error(&c, "cannot start writing %s: %s", f->name, strerror(-r));
            free(buf);
            s->buf = NULL;
            failed++;
            continue;
        }
        inflight++;
    }
    while (inflight > 0) {
        if (finish(&c, &slots[head], &pr, &stored, &bytes) < 0)
            failed++;
        head = (head + 1) % jobs;
        inflight--;
    }
    double secs = progress_end(&pr);
    free(slots);
    r = register_objects(&c, dataset != NULL ? dataset : c.pool, &files, labels);
    if (r < 0) {
        cli_error(&c, "registering the objects in dataset %s failed: %s",
                  dataset != NULL ? dataset : c.pool, strerror(-r));
        failed++;
    }
    printf("stored %llu objects (%.1f MB) in pool %s in %.1f s (%.1f MB/s)",
           (unsigned long long)stored, (double)bytes / 1e6, c.pool, secs,
           secs > 0 ? (double)bytes / 1e6 / secs : 0.0);
    if (skipped > 0)
        printf(", skipped %llu file(s) that are not JPEGs", (unsigned long long)skipped);
    if (failed > 0)
        printf(", %llu write(s) FAILED", (unsigned long long)failed);
    putchar('\n');
    code = failed > 0 ? 1 : 0;
disconnect:
    cli_disconnect(&c);
done:
    free_list(&files);
    return code;
}
