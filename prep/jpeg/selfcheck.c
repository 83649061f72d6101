/*
 * selfcheck.c - huffman.c held to the libjpeg it runs with, once per process, before first use.
 *
 * huffman.c takes the place of libjpeg-turbo 2.1's entropy decoder and writes its private
 * structures. The build links the libjpeg-turbo it was compiled against (statically,
 * prep/jpeg/CMakeLists.txt), so the two cannot drift apart on a host; this check is the second
 * line: before the first install, two small embedded files (baseline, and progressive with
 * refinement scans) are read to coefficients by libjpeg's decoder and by huffman.c, and if
 * anything differs (coefficients, progression state, errors) huffman.c is never installed in
 * this process: libjpeg decodes alone, slower and with the same bytes. The verdict is decided
 * once and only read afterwards (below): the one piece of process-wide state in prep.
 */
#include "huffman.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "prep.h"
#include "selfcheck_jpegs.h"

/* FNV-1a, over the coefficients and the progression state. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

struct read_state {
    struct sophon__jpeg j;
    unsigned flags;
    int installed;
    uint64_t hash;
};

static void install_at_start(struct sophon__jpeg *j, void *arg)
{
    struct read_state *st = arg;
    st->installed = sophon__huffman_install_unchecked(&j->cinfo, st->flags);
}

/* Hashes what jpeg_read_coefficients left in st->j.cinfo. */
static void hash_coefficients(struct read_state *st, jvirt_barray_ptr *coefs)
{
    j_decompress_ptr c = &st->j.cinfo;
    uint64_t h = 1469598103934665603ull;

    for (int ci = 0; ci < c->num_components; ci++) {
        const jpeg_component_info *comp = &c->comp_info[ci];
        for (JDIMENSION y = 0; y < comp->height_in_blocks; y++) {
            JBLOCKARRAY row =
                (*c->mem->access_virt_barray)((j_common_ptr)c, coefs[ci], y, 1, FALSE);
            h = fnv(h, row[0], comp->width_in_blocks * sizeof(JBLOCK));
        }
    }
    if (c->progressive_mode && c->coef_bits != NULL)
        h = fnv(h, c->coef_bits, 2 * (size_t)c->num_components * sizeof(*c->coef_bits));
    st->hash = h;
}

/* Reads one file to coefficients into st->hash; with ours, through huffman.c. */
static int read_hash(struct read_state *st, const uint8_t *jpeg, size_t len, int ours, char *err,
                     size_t errlen)
{
    int rc;

    sophon__jpeg_init(&st->j, NULL);
    if (ours) {
        st->j.at_start = install_at_start;
        st->j.at_start_arg = st;
    }
    if (setjmp(st->j.jump)) {
        rc = st->j.code;
        sophon__seterr(err, errlen, "%s", st->j.msg);
        goto done;
    }
    jpeg_create_decompress(&st->j.cinfo);
    sophon__jpeg_src(&st->j, jpeg, len);
    if (jpeg_read_header(&st->j.cinfo, TRUE) != JPEG_HEADER_OK)
        sophon__jpeg_fail(&st->j, -EBADMSG, "no image");
    hash_coefficients(st, jpeg_read_coefficients(&st->j.cinfo));
    rc = 0;
done:
    jpeg_destroy_decompress(&st->j.cinfo);
    return rc;
}

int sophon__huffman_compare(const uint8_t *jpeg, size_t len, unsigned flags, char *err,
                            size_t errlen)
{
    struct read_state theirs = {.flags = flags}, ours = {.flags = flags};
    char msg[JMSG_LENGTH_MAX + 64] = "";
    int r1 = read_hash(&theirs, jpeg, len, 0, msg, sizeof(msg));
    int r2 = read_hash(&ours, jpeg, len, 1, msg, sizeof(msg));

    /* Out of memory is no verdict: the caller may ask again. */
    if (r1 == -ENOMEM || r2 == -ENOMEM) {
        sophon__seterr(err, errlen, "out of memory");
        return -EAGAIN;
    }
    if (r1 == 0 && !ours.installed) {
        sophon__seterr(err, errlen, "huffman.c could not be installed on a file libjpeg reads");
        return -EPROTO;
    }
    if (r1 != r2 || (r1 == 0 && theirs.hash != ours.hash)) {
        sophon__seterr(err, errlen,
                       "huffman.c and libjpeg differ (results %d and %d, coefficient hashes "
                       "%016llx and %016llx%s%s)",
                       r1, r2, (unsigned long long)theirs.hash, (unsigned long long)ours.hash,
                       msg[0] ? ": " : "", msg);
        return -EPROTO;
    }
    return 0;
}

/*
 * The verdict, decided once per process and only read afterwards: VERDICT_NONE until a check
 * completes (one that ran out of memory decides nothing, and the next use checks again), then
 * VERDICT_AGREES or VERDICT_DIFFERS for good, with its message. Threads that start at once may
 * each run the check (a few hundred microseconds); the first to finish publishes its verdict
 * (VERDICT_PUBLISHING while it writes the message) and the others keep their own, the same.
 */
enum { VERDICT_NONE, VERDICT_PUBLISHING, VERDICT_AGREES, VERDICT_DIFFERS };
static _Atomic int verdict = VERDICT_NONE;
static char verdict_msg[512];

/* Runs the check: 0, -EPROTO (they differ) or -EAGAIN (no verdict), with its message in msg. */
static int run_check(char *msg, size_t len)
{
    static const struct {
        const uint8_t *jpeg;
        size_t len;
        unsigned flags;
        const char *what;
    } files[] = {
        {baseline_jpeg, sizeof(baseline_jpeg), 0, "baseline"},
        {progressive_jpeg, sizeof(progressive_jpeg), 0, "progressive"},
        {progressive_jpeg, sizeof(progressive_jpeg), SOPHON__HUFFMAN_PORTABLE,
         "progressive, portable refinement"},
    };
    char why[256];

    if (!sophon__huffman_supported()) {
        snprintf(msg, len,
                 "this build's libjpeg is not libjpeg-turbo 2.1: sophon's Huffman "
                 "decoder is not used, libjpeg decodes alone");
        return 0;
    }
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        int r =
            sophon__huffman_compare(files[i].jpeg, files[i].len, files[i].flags, why, sizeof(why));
        if (r == -EAGAIN) {
            snprintf(msg, len,
                     "the Huffman decoder's self-check could not run (%s); libjpeg "
                     "decodes until it can",
                     why);
            return r;
        }
        if (r < 0) {
            snprintf(msg, len,
                     "sophon's Huffman decoder disagrees with the linked libjpeg on its %s check "
                     "file (%s): libjpeg decodes alone in this process",
                     files[i].what, why);
            return r;
        }
    }
    snprintf(msg, len, "sophon's Huffman decoder agrees with the linked libjpeg-turbo");
    return 0;
}

int sophon_prep_selfcheck(char *err, size_t errlen)
{
    int v = verdict;
    char msg[sizeof(verdict_msg)];
    int r;

    if (v == VERDICT_AGREES || v == VERDICT_DIFFERS) {
        sophon__seterr(err, errlen, "%s", verdict_msg);
        return v == VERDICT_AGREES ? 0 : -EPROTO;
    }
    r = run_check(msg, sizeof(msg));
    sophon__seterr(err, errlen, "%s", msg);
    if (r != -EAGAIN) {
        int none = VERDICT_NONE;
        if (atomic_compare_exchange_strong(&verdict, &none, VERDICT_PUBLISHING)) {
            memcpy(verdict_msg, msg, sizeof(verdict_msg));
            verdict = r == 0 ? VERDICT_AGREES : VERDICT_DIFFERS;
        }
    }
    return r;
}

int sophon__huffman_install(j_decompress_ptr c, unsigned int flags)
{
    if (sophon_prep_selfcheck(NULL, 0) < 0)
        return 0;
    return sophon__huffman_install_unchecked(c, flags);
}
