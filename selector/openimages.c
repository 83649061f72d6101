/*
 * openimages.c - the SOPHON paper's OpenImages profile as records.
 *
 * Rows look like "0;462687;1886241;(1024, 614);150561;150561;602145;602145;": index, stored JPEG
 * bytes, then Python object sizes after each step (which we do not need: the bytes of our own
 * stages are fixed by the wire format) and the decoded shape "(width, height)".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "selector.h"
#include "selector_internal.h"

#define OI_FIELDS 9 /* 8 columns and the empty field after the trailing ';' */

/* Parses "(w, h)" strictly. */
static int parse_shape(const char *s, uint32_t *w, uint32_t *h)
{
    char buf[32];
    uint64_t v;
    size_t len = strlen(s);

    if (len < 6 || len >= sizeof(buf) || s[0] != '(' || s[len - 1] != ')')
        return -EINVAL;
    memcpy(buf, s + 1, len - 2);
    buf[len - 2] = '\0';
    char *comma = strchr(buf, ',');
    if (!comma || comma[1] != ' ')
        return -EINVAL;
    *comma = '\0';
    if (sophon__parse_u64(buf, UINT32_MAX, &v) < 0 || v == 0)
        return -EINVAL;
    *w = (uint32_t)v;
    if (sophon__parse_u64(comma + 2, UINT32_MAX, &v) < 0 || v == 0)
        return -EINVAL;
    *h = (uint32_t)v;
    return 0;
}

static int split_semicolons(char *line, char **field, int max)
{
    int n = 0;
    for (;;) {
        if (n == max)
            return -1;
        field[n++] = line;
        char *p = strchr(line, ';');
        if (!p)
            return n;
        *p = '\0';
        line = p + 1;
    }
}

int sophon_records_import_openimages(sophon_records **out, FILE *f,
                                     const struct sophon_cost_model *model, char *err,
                                     size_t errlen)
{
    sophon_records *set = NULL;
    char *line = NULL, *field[OI_FIELDS + 1];
    size_t cap = 0, lineno = 1;
    int rc;

    if (!out || !f)
        return -EINVAL;
    *out = NULL;
    rc = sophon_records_new(&set);
    if (rc < 0)
        goto done;
    if (getline(&line, &cap, f) < 0) {
        rc = ferror(f) ? -EIO : -EBADMSG;
        sophon__seterr(err, errlen, "line 1: no header");
        goto done;
    }
    sophon__chomp(line);
    if (strncmp(line, "index;raw;decoding;original_shape;", 34) != 0) {
        sophon__seterr(err, errlen, "line 1: not an OpenImages profile header");
        rc = -EBADMSG;
        goto done;
    }
    while (getline(&line, &cap, f) >= 0) {
        struct sophon_record r = {0};
        char name[24];
        uint64_t index, raw;
        lineno++;
        sophon__chomp(line);
        int n = split_semicolons(line, field, OI_FIELDS + 1);
        /* 8 columns, with or without the trailing ';'. */
        if (n != OI_FIELDS - 1 && !(n == OI_FIELDS && field[OI_FIELDS - 1][0] == '\0')) {
            sophon__seterr(err, errlen, "line %zu: expected 8 fields", lineno);
            rc = -EBADMSG;
            goto done;
        }
        if (sophon__parse_u64(field[0], UINT64_MAX, &index) < 0 ||
            sophon__parse_u64(field[1], UINT64_MAX, &raw) < 0 || raw == 0 ||
            parse_shape(field[3], &r.width, &r.height) < 0) {
            sophon__seterr(err, errlen, "line %zu: bad index, raw size or shape", lineno);
            rc = -EBADMSG;
            goto done;
        }
        snprintf(name, sizeof(name), "%llu", (unsigned long long)index);
        r.name = name;
        r.stored_bytes = raw;
        r.components = 3;
        r.subsampling = SOPHON_SS_420; /* the common case of camera JPEGs */
        r.progressive = 0;
        rc = sophon_cost_model_fill(&r, model);
        if (rc < 0)
            goto done;
        rc = sophon_records_add(set, &r);
        if (rc < 0)
            goto done;
    }
    if (ferror(f)) {
        rc = -EIO;
        goto done;
    }
    *out = set;
    set = NULL;
    rc = 0;
done:
    free(line);
    sophon_records_free(set);
    return rc;
}
