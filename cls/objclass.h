/*
 * objclass.h - the C interface a Ceph OSD (16.2) offers to object classes.
 *
 * Debian ships no header for it, so sophon declares the subset it uses. These symbols are
 * defined by ceph-osd itself (`nm -D --defined-only /usr/bin/ceph-osd`) and resolved when the
 * OSD dlopen()s the class. The cls_cxx_* functions (stat, omap, write) are C++ only and absent
 * here on purpose.
 */
#ifndef SOPHON_OBJCLASS_H
#define SOPHON_OBJCLASS_H

#include <stddef.h>

typedef void *cls_handle_t;
typedef void *cls_method_handle_t;
typedef void *cls_method_context_t;

/*
 * A method. `in` holds in_len bytes, is not NUL-terminated and may be NULL when in_len is 0.
 * *out must come from cls_alloc(); the OSD takes ownership of it, also when the method fails.
 * Returns 0 (or a non-negative value) on success, a negative errno on failure.
 */
typedef int (*cls_method_call_t)(cls_method_context_t ctx, char *in, int in_len, char **out,
                                 int *out_len);

#define CLS_METHOD_RD 0x1 /* the method reads the object */
#define CLS_METHOD_WR 0x2 /* the method writes the object */

/* Allocation the OSD can free: class output buffers must come from here. */
extern void *cls_alloc(size_t size);
extern void cls_free(void *p);

/* Reads len bytes at ofs (len 0: to the end). *out is freed with cls_free(). Returns the length
 * read or a negative errno. */
extern int cls_read(cls_method_context_t ctx, int ofs, int len, char **out, int *out_len);
extern int cls_getxattr(cls_method_context_t ctx, const char *name, char **out, int *out_len);

/* Logs to the OSD log when level <= the OSD's `debug objclass` level. */
extern int cls_log(int level, const char *format, ...) __attribute__((__format__(printf, 2, 3)));

/* Registration. cls_register returns nonzero on success. */
extern int cls_register(const char *name, cls_handle_t *handle);
extern int cls_register_method(cls_handle_t hclass, const char *method, int flags,
                               cls_method_call_t call, cls_method_handle_t *handle);

/* Defined by the class; the OSD calls it once after dlopen(). */
__attribute__((visibility("default"))) void __cls_init(void);

#endif
