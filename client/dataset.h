/*
 * dataset.h - a dataset's index in the cluster: its objects, their labels and their records.
 *
 * The index of dataset NAME is the object "dataset.NAME" in the namespace ".sophon" of the data
 * pool (so it never shows among the dataset's own objects). The class cannot write omap from C,
 * so clients keep the index, in its omap:
 *     o/OBJ     -> label (ImageFolder class, the object's first path component) or ""
 *     r/OBJ     -> the object's record: one line of sophon-records CSV (selector.h), no header
 *     s/OBJ     -> "SIZE MTIME" of the object the record was made from (incremental profiles)
 *     @namespace -> the RADOS namespace `sophon put` stored the objects in ("" the default)
 *     @profile  -> "storage_speed=X\nclient_speed=Y\nosd_op_s=Z\nclient_byte_s=W\ncrop_speed=V\n":
 *                  the speeds at which an OSD core and the profiling client ran the cost model's
 *                  CPU on a sample (model s / measured s), the OSDs' CPU per operation beyond
 *                  the preparations over it (osd_cpu.h), the client's per byte received
 *                  (librados's messenger) and an OSD core's speed for the crop stage's figures
 *                  on the same boxes (the last three lines left out where not measured)
 * Every client of the dataset reads the same index, so records made once serve all of them.
 */
#ifndef SOPHON_DATASET_H
#define SOPHON_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#include "selector.h"

#define SOPHON_INDEX_NAMESPACE ".sophon"

/* A dataset as read from its index. Records are sorted by object name; record i's label is
 * labels[i], an index into classes (sorted), or -1 for none. */
struct sophon_dataset {
    sophon_records *records;
    int32_t *labels;
    char **classes;
    size_t nclasses;
    double storage_speed; /* an OSD core's against the cost model; 1: never calibrated */
    double client_speed;  /* the profiling client's against it; 1: not calibrated (before 0.3) */
    double osd_op_s;      /* the OSDs' CPU per operation beyond the preparations, OSD seconds,
                           * as profiled; 0: not measured (an older profile, or no answer) */
    double client_byte_s; /* the client's (librados's messenger) per byte received, as
                           * profiled; 0: not measured */
    double crop_speed;    /* an OSD core's for the crop stage's figures (SOPHON_SEL_CROP_OSD
                           * of the decode) against the cost model, as profiled; 0: not measured
                           * (the plans take storage_speed: the built-in ratio) */
};

/* An entry to write into an index: any of label, record, stamp may be NULL / 0. */
struct sophon_index_entry {
    const char *name;
    const char *label;                  /* o/ key; NULL: not written */
    const struct sophon_record *record; /* r/ key; NULL: not written */
    uint64_t size;                      /* s/ key, with mtime, when record != NULL */
    int64_t mtime;
};

/* The index object's name for a dataset ("dataset.NAME") into buf. Returns -EINVAL if the name
 * is empty or too long. io's namespace is left alone: use sophon__index_io(). */
int sophon__index_oid(char *buf, size_t len, const char *dataset);

/* Writes entries (in batches of at most 1,000 keys per operation). io is the data pool's ioctx;
 * the index's namespace is set and restored around the writes. Returns 0 or a negative errno. */
int sophon__index_write(rados_ioctx_t io, const char *dataset,
                        const struct sophon_index_entry *entries, size_t n);

/* Room for a namespace's name, with its terminating 0. */
#define SOPHON_NAMESPACE_MAX 256

/* Records io's namespace as the one of the dataset's objects (sophon put). */
int sophon__index_write_namespace(rados_ioctx_t io, const char *dataset);

/* The namespace of the dataset's objects into buf (SOPHON_NAMESPACE_MAX bytes, "" the default):
 * 0, -ENOENT where none was recorded (put before 0.3, a dataset of --list), or < 0. */
int sophon__index_namespace(rados_ioctx_t io, const char *dataset, char *buf);

/*
 * Points io at the namespace of the dataset's objects: the recorded one where `given` is NULL
 * (no -N), `given` itself where it is the recorded one or nothing is recorded. Returns 0, -EXDEV
 * where `given` is another namespace (err says which to give), or < 0 reading the index.
 */
int sophon__dataset_use_namespace(rados_ioctx_t io, const char *dataset, const char *given,
                                  char *err, size_t errlen);

/* Writes the profile's calibration: the speeds of an OSD core and of this client against the
 * cost model, the OSDs' CPU per operation, this client's per byte and an OSD core's speed for
 * the crop stage (the last three each left out where <= 0). */
int sophon__index_write_profile(rados_ioctx_t io, const char *dataset, double storage_speed,
                                double client_speed, double osd_op_s, double client_byte_s,
                                double crop_speed);

/*
 * Reads what the index holds. members (o/ keys) and stamps (s/ keys) come back as parallel
 * arrays sorted by name when the pointers are not NULL. Returns 0 (an index that does not exist
 * reads as empty), or a negative errno.
 */
struct sophon_index_member {
    char *name;
    char *label;
};
struct sophon_index_stamp {
    char *name;
    uint64_t size;
    int64_t mtime;
};
int sophon__index_members(rados_ioctx_t io, const char *dataset, struct sophon_index_member **out,
                          size_t *n);
int sophon__index_stamps(rados_ioctx_t io, const char *dataset, struct sophon_index_stamp **out,
                         size_t *n);
void sophon__index_members_free(struct sophon_index_member *m, size_t n);
void sophon__index_stamps_free(struct sophon_index_stamp *s, size_t n);

/*
 * Reads a dataset: every record (r/ keys), its label (o/ keys) and the calibration. Returns 0,
 * -ENOENT if the dataset has no records (run `sophon profile` first), -EBADMSG a record that
 * does not parse (err says which), or another negative errno.
 */
int sophon__dataset_read(struct sophon_dataset *out, rados_ioctx_t io, const char *dataset,
                         char *err, size_t errlen);
void sophon__dataset_free(struct sophon_dataset *ds);

/* One record as a CSV line (no header, no newline) in a malloc'ed string; NULL on failure. */
char *sophon__record_line(const struct sophon_record *rec);

#endif
