/*
 * dataset.c - the dataset index in omap (see dataset.h for its layout).
 */
#define _GNU_SOURCE /* open_memstream, fmemopen */
#include "dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sophon_common.h"

#define BATCH 1000

int sophon__index_oid(char *buf, size_t len, const char *dataset)
{
    if (dataset == NULL || dataset[0] == '\0')
        return -EINVAL;
    int n = snprintf(buf, len, "dataset.%s", dataset);
    return n < 0 || (size_t)n >= len ? -EINVAL : 0;
}

/* An ioctx of its own on the index's namespace, so that the caller's stays untouched and
 * usable from other threads. */
static int index_io(rados_ioctx_t io, rados_ioctx_t *out)
{
    int r = rados_ioctx_create2(rados_ioctx_get_cluster(io), rados_ioctx_get_id(io), out);
    if (r < 0)
        return r;
    rados_ioctx_set_namespace(*out, SOPHON_INDEX_NAMESPACE);
    return 0;
}

char *sophon__record_line(const struct sophon_record *rec)
{
    sophon_records *one = NULL;
    char *text = NULL, *line = NULL;
    size_t len = 0;
    FILE *f = NULL;

    if (sophon_records_new(&one) < 0 || sophon_records_add(one, rec) < 0)
        goto done;
    f = open_memstream(&text, &len);
    if (f == NULL || sophon_records_write_csv(one, f) < 0)
        goto done;
    if (fclose(f) != 0) {
        f = NULL;
        goto done;
    }
    f = NULL;
    /* Drop the header line and the final newline. */
    char *nl = strchr(text, '\n');
    if (nl != NULL) {
        line = strdup(nl + 1);
        if (line != NULL)
            line[strcspn(line, "\n")] = '\0';
    }
done:
    if (f != NULL)
        fclose(f);
    free(text);
    sophon_records_free(one);
    return line;
}

/* Sets up to BATCH keys per write operation. */
struct kv_batch {
    const char *keys[BATCH];
    const char *vals[BATCH];
    size_t key_lens[BATCH], val_lens[BATCH];
    char *owned[BATCH * 3];
    size_t n, nowned;
};

static void batch_reset(struct kv_batch *b)
{
    for (size_t i = 0; i < b->nowned; i++)
        free(b->owned[i]);
    b->n = 0;
    b->nowned = 0;
}

static int batch_flush(struct kv_batch *b, rados_ioctx_t iio, const char *oid)
{
    int r = 0;
    if (b->n > 0) {
        rados_write_op_t op = rados_create_write_op();
        if (op == NULL)
            return -ENOMEM;
        rados_write_op_omap_set2(op, b->keys, b->vals, b->key_lens, b->val_lens, b->n);
        r = rados_write_op_operate(op, iio, oid, NULL, 0);
        rados_release_write_op(op);
    }
    batch_reset(b);
    return r;
}

/* Adds key prefix+name -> val (copied); flushes a full batch. */
static int batch_add(struct kv_batch *b, rados_ioctx_t iio, const char *oid, const char *prefix,
                     const char *name, char *val_owned)
{
    if (val_owned == NULL)
        return -ENOMEM;
    size_t klen = strlen(prefix) + strlen(name);
    char *key = malloc(klen + 1);
    if (key == NULL) {
        free(val_owned);
        return -ENOMEM;
    }
    snprintf(key, klen + 1, "%s%s", prefix, name);
    b->keys[b->n] = key;
    b->key_lens[b->n] = klen;
    b->vals[b->n] = val_owned;
    b->val_lens[b->n] = strlen(val_owned);
    b->owned[b->nowned++] = key;
    b->owned[b->nowned++] = val_owned;
    b->n++;
    return b->n == BATCH ? batch_flush(b, iio, oid) : 0;
}

int sophon__index_write(rados_ioctx_t io, const char *dataset,
                        const struct sophon_index_entry *entries, size_t n)
{
    char oid[256], stamp[64];
    rados_ioctx_t iio;
    int r = sophon__index_oid(oid, sizeof(oid), dataset);
    if (r < 0)
        return r;
    struct kv_batch *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return -ENOMEM;
    r = index_io(io, &iio);
    if (r < 0) {
        free(b);
        return r;
    }
    for (size_t i = 0; i < n && r == 0; i++) {
        const struct sophon_index_entry *e = &entries[i];
        if (e->label != NULL)
            r = batch_add(b, iio, oid, "o/", e->name, strdup(e->label));
        if (r == 0 && e->record != NULL) {
            r = batch_add(b, iio, oid, "r/", e->name, sophon__record_line(e->record));
            snprintf(stamp, sizeof(stamp), "%llu %lld", (unsigned long long)e->size,
                     (long long)e->mtime);
            if (r == 0)
                r = batch_add(b, iio, oid, "s/", e->name, strdup(stamp));
        }
    }
    if (r == 0)
        r = batch_flush(b, iio, oid);
    batch_reset(b);
    free(b);
    rados_ioctx_destroy(iio);
    return r;
}

/* Sets one key of the index's omap. */
static int index_set(rados_ioctx_t io, const char *dataset, const char *key, const char *val)
{
    char oid[256];
    rados_ioctx_t iio;
    int r = sophon__index_oid(oid, sizeof(oid), dataset);
    if (r < 0)
        return r;
    if ((r = index_io(io, &iio)) < 0)
        return r;
    const char *keys[] = {key}, *vals[] = {val};
    size_t klen[] = {strlen(key)}, vlen[] = {strlen(val)};
    rados_write_op_t op = rados_create_write_op();
    if (op == NULL) {
        rados_ioctx_destroy(iio);
        return -ENOMEM;
    }
    rados_write_op_omap_set2(op, keys, vals, klen, vlen, 1);
    r = rados_write_op_operate(op, iio, oid, NULL, 0);
    rados_release_write_op(op);
    rados_ioctx_destroy(iio);
    return r;
}

int sophon__index_write_profile(rados_ioctx_t io, const char *dataset, double storage_speed,
                                double client_speed, double osd_op_s, double client_byte_s,
                                double crop_speed)
{
    char val[240];
    int len = snprintf(val, sizeof(val), "storage_speed=%.17g\nclient_speed=%.17g\n", storage_speed,
                       client_speed);
    if (osd_op_s > 0)
        len += snprintf(val + len, sizeof(val) - (size_t)len, "osd_op_s=%.17g\n", osd_op_s);
    if (client_byte_s > 0)
        len +=
            snprintf(val + len, sizeof(val) - (size_t)len, "client_byte_s=%.17g\n", client_byte_s);
    if (crop_speed > 0)
        snprintf(val + len, sizeof(val) - (size_t)len, "crop_speed=%.17g\n", crop_speed);
    return index_set(io, dataset, "@profile", val);
}

int sophon__index_write_namespace(rados_ioctx_t io, const char *dataset)
{
    char ns[SOPHON_NAMESPACE_MAX];
    int r = rados_ioctx_get_namespace(io, ns, sizeof(ns));
    if (r < 0)
        return r;
    return index_set(io, dataset, "@namespace", ns);
}

/* Calls fn for every key with prefix (the prefix stripped from the key), in key order. */
typedef int (*omap_fn)(void *arg, const char *key, size_t key_len, const char *val, size_t val_len);

static int omap_each(rados_ioctx_t io, const char *dataset, const char *prefix, omap_fn fn,
                     void *arg)
{
    char oid[256];
    char *after = NULL;
    rados_ioctx_t iio;
    int r = sophon__index_oid(oid, sizeof(oid), dataset);
    if (r < 0)
        return r;
    if ((r = index_io(io, &iio)) < 0)
        return r;
    after = strdup("");
    if (after == NULL)
        r = -ENOMEM;
    unsigned char more = 1;
    while (r == 0 && more && after != NULL) {
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t it = NULL;
        int prval = 0;
        more = 0;
        if (op == NULL) {
            r = -ENOMEM;
            break;
        }
        rados_read_op_omap_get_vals2(op, after, prefix, BATCH, &it, &more, &prval);
        r = rados_read_op_operate(op, iio, oid, 0);
        if (r == 0 && prval < 0)
            r = prval;
        if (r == 0) {
            char *key, *val;
            size_t klen, vlen;
            while (r == 0 && rados_omap_get_next2(it, &key, &val, &klen, &vlen) == 0 &&
                   key != NULL) {
                size_t plen = strlen(prefix);
                r = fn(arg, key + plen, klen - plen, val, vlen);
                free(after);
                after = strndup(key, klen);
                if (after == NULL)
                    r = -ENOMEM;
            }
        }
        if (it != NULL)
            rados_omap_get_end(it);
        rados_release_read_op(op);
    }
    if (r == -ENOENT) /* no index yet: an empty dataset */
        r = 0;
    free(after);
    rados_ioctx_destroy(iio);
    return r;
}

struct vec {
    void *v;
    size_t n, cap, size;
};

static void *vec_push(struct vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        void *p = realloc(v->v, cap * v->size);
        if (p == NULL)
            return NULL;
        v->v = p;
        v->cap = cap;
    }
    return (char *)v->v + v->size * v->n++;
}

static int add_member(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct sophon_index_member *m = vec_push(arg);
    if (m == NULL)
        return -ENOMEM;
    m->name = strndup(key, klen);
    m->label = strndup(val, vlen);
    return m->name != NULL && m->label != NULL ? 0 : -ENOMEM;
}

static int add_stamp(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct sophon_index_stamp *s = vec_push(arg);
    char buf[64];
    unsigned long long size;
    long long mtime;
    if (s == NULL)
        return -ENOMEM;
    s->name = strndup(key, klen);
    snprintf(buf, sizeof(buf), "%.*s", (int)(vlen < 63 ? vlen : 63), val);
    if (sscanf(buf, "%llu %lld", &size, &mtime) != 2)
        size = 0, mtime = -1; /* unreadable: profiled again */
    s->size = size;
    s->mtime = mtime;
    return s->name != NULL ? 0 : -ENOMEM;
}

int sophon__index_members(rados_ioctx_t io, const char *dataset, struct sophon_index_member **out,
                          size_t *n)
{
    struct vec v = {.size = sizeof(struct sophon_index_member)};
    int r = omap_each(io, dataset, "o/", add_member, &v);
    if (r < 0) {
        sophon__index_members_free(v.v, v.n);
        return r;
    }
    *out = v.v;
    *n = v.n;
    return 0;
}

int sophon__index_stamps(rados_ioctx_t io, const char *dataset, struct sophon_index_stamp **out,
                         size_t *n)
{
    struct vec v = {.size = sizeof(struct sophon_index_stamp)};
    int r = omap_each(io, dataset, "s/", add_stamp, &v);
    if (r < 0) {
        sophon__index_stamps_free(v.v, v.n);
        return r;
    }
    *out = v.v;
    *n = v.n;
    return 0;
}

void sophon__index_members_free(struct sophon_index_member *m, size_t n)
{
    for (size_t i = 0; m != NULL && i < n; i++) {
        free(m[i].name);
        free(m[i].label);
    }
    free(m);
}

void sophon__index_stamps_free(struct sophon_index_stamp *s, size_t n)
{
    for (size_t i = 0; s != NULL && i < n; i++)
        free(s[i].name);
    free(s);
}

/* The record lines, gathered into one CSV text under the header. */
static int add_line(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    (void)key;
    (void)klen;
    FILE *f = arg;
    if (fwrite(val, 1, vlen, f) != vlen || fputc('\n', f) == EOF)
        return -EIO;
    return 0;
}

/* @profile's lines: each figure that is there and positive (an index of an older profile has
 * storage_speed only, or no osd_op_s, client_byte_s or crop_speed). */
static int add_profile(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct sophon_dataset *ds = arg;
    char buf[256], *save = NULL;
    double speed;
    (void)key;
    (void)klen;
    snprintf(buf, sizeof(buf), "%.*s", (int)(vlen < sizeof(buf) - 1 ? vlen : sizeof(buf) - 1), val);
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (sscanf(line, "storage_speed=%lf", &speed) == 1 && speed > 0)
            ds->storage_speed = speed;
        else if (sscanf(line, "client_speed=%lf", &speed) == 1 && speed > 0)
            ds->client_speed = speed;
        else if (sscanf(line, "osd_op_s=%lf", &speed) == 1 && speed > 0 && speed < 1)
            ds->osd_op_s = speed;
        else if (sscanf(line, "client_byte_s=%lf", &speed) == 1 && speed > 0 && speed < 1)
            ds->client_byte_s = speed;
        else if (sscanf(line, "crop_speed=%lf", &speed) == 1 && speed > 0)
            ds->crop_speed = speed;
    }
    return 0;
}

static int copy_namespace(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    char *buf = arg;
    (void)key;
    (void)klen;
    if (vlen >= SOPHON_NAMESPACE_MAX)
        return -ENAMETOOLONG;
    if (vlen > 0) /* the default namespace's "" may come as no buffer at all */
        memcpy(buf, val, vlen);
    buf[vlen] = '\0';
    return 0;
}

int sophon__index_namespace(rados_ioctx_t io, const char *dataset, char *buf)
{
    buf[0] = '\1'; /* no namespace has it: "not recorded" until a key says otherwise */
    int r = omap_each(io, dataset, "@namespace", copy_namespace, buf);
    if (r == 0 && buf[0] == '\1')
        r = -ENOENT;
    return r;
}

int sophon__dataset_use_namespace(rados_ioctx_t io, const char *dataset, const char *given,
                                  char *err, size_t errlen)
{
    char ns[SOPHON_NAMESPACE_MAX];
    int r = sophon__index_namespace(io, dataset, ns);
    if (r == -ENOENT) {
        /* Nothing recorded (put before 0.3, a --list dataset): as given. */
        rados_ioctx_set_namespace(io, given);
        return 0;
    }
    if (r < 0)
        return r;
    if (given == NULL || strcmp(given, ns) == 0) {
        rados_ioctx_set_namespace(io, ns[0] != '\0' ? ns : NULL);
        return 0;
    }
    if (ns[0] != '\0')
        sophon__seterr(err, errlen,
                       "dataset %s's objects are in namespace '%s' (sophon put -N %s), not '%s': "
                       "give -N %s, or none",
                       dataset, ns, ns, given, ns);
    else
        sophon__seterr(err, errlen,
                       "dataset %s's objects are in the default namespace, not '%s': leave -N out",
                       dataset, given);
    return -EXDEV;
}

static int by_class(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sophon__dataset_read(struct sophon_dataset *out, rados_ioctx_t io, const char *dataset,
                         char *err, size_t errlen)
{
    sophon_records *empty = NULL;
    struct sophon_index_member *members = NULL;
    size_t nmembers = 0, len = 0;
    char *text = NULL;
    FILE *f = NULL;
    int r;

    memset(out, 0, sizeof(*out));
    out->storage_speed = out->client_speed = 1.0;
    /* The header comes from the selector's own writer, so the format is defined once. */
    if ((r = sophon_records_new(&empty)) < 0)
        goto done;
    f = open_memstream(&text, &len);
    if (f == NULL || sophon_records_write_csv(empty, f) < 0) {
        r = -ENOMEM;
        goto done;
    }
    if ((r = omap_each(io, dataset, "r/", add_line, f)) < 0)
        goto done;
    r = fclose(f) == 0 ? 0 : -ENOMEM; /* a memory stream's last flush can only run out of memory */
    f = NULL;
    if (r < 0)
        goto done;
    if (strchr(text, '\n') == text + len - 1) {
        sophon__seterr(err, errlen, "dataset %s has no records: run `sophon profile --dataset %s`",
                       dataset, dataset);
        r = -ENOENT;
        goto done;
    }
    f = fmemopen(text, len, "r");
    if (f == NULL) {
        r = -ENOMEM;
        goto done;
    }
    if ((r = sophon_records_read_csv(&out->records, f, err, errlen)) < 0)
        goto done;
    if ((r = omap_each(io, dataset, "@profile", add_profile, out)) < 0)
        goto done;
    if ((r = sophon__index_members(io, dataset, &members, &nmembers)) < 0)
        goto done;
    /* Classes: the distinct non-empty labels, sorted; then each record's index into them. */
    size_t n = sophon_records_count(out->records);
    out->labels = malloc((n > 0 ? n : 1) * sizeof(*out->labels));
    out->classes = calloc(nmembers > 0 ? nmembers : 1, sizeof(*out->classes));
    if (out->labels == NULL || out->classes == NULL) {
        r = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < nmembers; i++) {
        if (members[i].label[0] == '\0')
            continue;
        if (bsearch(&members[i].label, out->classes, out->nclasses, sizeof(char *), by_class))
            continue;
        out->classes[out->nclasses] = strdup(members[i].label);
        if (out->classes[out->nclasses] == NULL) {
            r = -ENOMEM;
            goto done;
        }
        out->nclasses++;
        qsort(out->classes, out->nclasses, sizeof(char *), by_class);
    }
    /* Records and members are both sorted by object name (omap key order): merge them. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = sophon_records_get(out->records, i)->name;
        out->labels[i] = -1;
        while (m < nmembers && strcmp(members[m].name, name) < 0)
            m++;
        if (m < nmembers && strcmp(members[m].name, name) == 0 && members[m].label[0] != '\0') {
            char **c =
                bsearch(&members[m].label, out->classes, out->nclasses, sizeof(char *), by_class);
            out->labels[i] = c != NULL ? (int32_t)(c - out->classes) : -1;
        }
    }
    r = 0;
done:
    if (f != NULL)
        fclose(f);
    free(text);
    sophon_records_free(empty);
    sophon__index_members_free(members, nmembers);
    if (r < 0)
        sophon__dataset_free(out);
    return r;
}

void sophon__dataset_free(struct sophon_dataset *ds)
{
    if (ds == NULL)
        return;
    sophon_records_free(ds->records);
    free(ds->labels);
    for (size_t i = 0; ds->classes != NULL && i < ds->nclasses; i++)
        free(ds->classes[i]);
    free(ds->classes);
    memset(ds, 0, sizeof(*ds));
}
