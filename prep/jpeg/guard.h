/*
 * guard.h - a libjpeg decompressor that cannot exit(), print, or outlive its call.
 *
 * libjpeg reports errors through cinfo->err->error_exit, whose default calls exit(). Here each
 * call owns a struct sophon__jpeg (on its stack) with its own jmp_buf: errors and warnings
 * longjmp back to the caller's setjmp with a negative errno in ->code and the libjpeg message in
 * ->msg. There is no global state, so any number of threads may decode at once.
 *
 * Usage (setjmp must be called in the function that owns the decode, before any libjpeg call):
 *
 *     struct sophon__jpeg j;
 *     sophon__jpeg_init(&j, lim);
 *     if (setjmp(j.jump)) { rc = j.code; goto done; }
 *     jpeg_create_decompress(&j.cinfo);
 *     ...
 *   done:
 *     jpeg_destroy_decompress(&j.cinfo);   (safe even if creation failed)
 *
 * Locals changed between setjmp and a longjmp must not be read after it; keep such state in
 * a struct reached through a pointer.
 */
#ifndef SOPHON_PREP_GUARD_H
#define SOPHON_PREP_GUARD_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first. */

#include <jpeglib.h>

#include "prep.h"

struct sophon__jpeg {
    struct jpeg_error_mgr pub; /* First member: cinfo.err points here and is cast back. */
    struct jpeg_progress_mgr progress;
    struct jpeg_decompress_struct cinfo;
    jmp_buf jump;
    int code;           /* Negative errno of the failure that longjmp'ed. */
    uint32_t max_scans; /* 0 = unlimited; checked as each scan starts. */
    /*
     * 1 while decoding a progressive copy with a lowered SOF height (prog_copy.h): libjpeg skips
     * the rest of each scan and warns JWRN_EXTRANEOUS_DATA, which is then expected. Other warnings
     * stay fatal.
     */
    int allow_scan_tails;
    /*
     * Called once with at_start_arg, at the first progress callback: in jpeg_start_decompress
     * (or jpeg_read_coefficients) of a file with several scans, after libjpeg has set up its
     * modules and the first scan and before it reads any entropy-coded data, where a module can
     * be put in place of libjpeg's. NULL: nothing. It may fail with sophon__jpeg_fail.
     */
    void (*at_start)(struct sophon__jpeg *j, void *arg);
    void *at_start_arg;
    char msg[JMSG_LENGTH_MAX + 64];
};

/*
 * sophon__jpeg_init - zero *j and install the error and progress managers. lim may be NULL
 * (no scan limit). Must precede jpeg_create_decompress(&j->cinfo).
 */
void sophon__jpeg_init(struct sophon__jpeg *j, const struct sophon_limits *lim);

/* sophon__jpeg_fail - record code and msg in j and longjmp to j->jump. Does not return. */
_Noreturn void sophon__jpeg_fail(struct sophon__jpeg *j, int code, const char *msg);

/*
 * sophon__jpeg_open - the checks every reader of an untrusted file makes before libjpeg reads it,
 * then its header: a walk over the marker segments (not a JPEG, a scan bomb over lim->max_scans,
 * a file without EOI: truncated), libjpeg's working memory budget (8 bytes per allowed pixel:
 * what a legitimate progressive image can need, and slack), jpeg_read_header, then 8-bit
 * samples and the pixel limit. *scans (if not NULL) gets the SOS markers counted. Fails through
 * sophon__jpeg_fail.
 */
void sophon__jpeg_open(struct sophon__jpeg *j, const uint8_t *jpeg, size_t len,
                       const struct sophon_limits *lim, uint32_t *scans);

/* sophon__jpeg_src - point the decompressor at jpeg[0..len) (no copy; caller keeps it alive). */
void sophon__jpeg_src(struct sophon__jpeg *j, const uint8_t *jpeg, size_t len);

#endif /* SOPHON_PREP_GUARD_H */
