/*
 * records.c - the record set and its sophon-records CSV form.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "selector.h"
#include "selector_internal.h"
#include "sophon_common.h"

struct sophon_records {
    struct sophon_record *rec;
    size_t n, cap;
};

static const char *const stage_names[SOPHON_STAGE_COUNT] = {"stored", "u8", "f32", "crop"};

const char *sophon_stage_name(int stage)
{
    return sophon__name_of(stage_names, SOPHON_STAGE_COUNT, stage, "unknown");
}

int sophon_stage_from_name(const char *name)
{
    for (int s = 0; name != NULL && s < SOPHON_STAGE_COUNT; s++)
        if (strcmp(name, stage_names[s]) == 0)
            return s;
    return -1;
}

int sophon_stages_parse(unsigned *out, const char *list, char *err, size_t errlen)
{
    unsigned set = 1u << SOPHON_STAGE_STORED;
    const char *p = list;
    if (out == NULL || list == NULL)
        return -EINVAL;
    for (;;) {
        size_t n = strcspn(p, ",");
        char name[16];
        int s = -1;
        if (n > 0 && n < sizeof(name)) {
            memcpy(name, p, n);
            name[n] = '\0';
            s = sophon_stage_from_name(name);
        }
        if (s < 0) {
            sophon__seterr(err, errlen, "unknown stage '%.*s' (stages: stored, crop, u8, f32)",
                           (int)(n < 40 ? n : 40), p);
            return -EINVAL;
        }
        set |= 1u << s;
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    *out = set;
    return 0;
}

int sophon_records_restrict(sophon_records *set, unsigned stages)
{
    if (!set)
        return -EINVAL;
    for (size_t i = 0; i < set->n; i++)
        for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
            if (s != SOPHON_STAGE_STORED && !(stages & (1u << s)))
                set->rec[i].stage[s] = (struct sophon_stage_cost){0};
    return 0;
}

int sophon_records_add_osd_op(sophon_records *set, double op_s)
{
    if (!set || !isfinite(op_s) || op_s < 0)
        return -EINVAL;
    for (size_t i = 0; i < set->n; i++)
        for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
            if (s == SOPHON_STAGE_STORED || set->rec[i].stage[s].bytes > 0)
                set->rec[i].stage[s].storage_cpu_s += op_s;
    return 0;
}

int sophon_records_scale_storage(sophon_records *set, size_t i, double factor)
{
    if (!set || i >= set->n || !isfinite(factor) || factor <= 0)
        return -EINVAL;
    for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
        if (s != SOPHON_STAGE_STORED)
            set->rec[i].stage[s].storage_cpu_s *= factor;
    return 0;
}

int sophon_records_scale_stage(sophon_records *set, int stage, double factor)
{
    if (!set || stage <= SOPHON_STAGE_STORED || stage >= SOPHON_STAGE_COUNT || !isfinite(factor) ||
        factor <= 0)
        return -EINVAL;
    for (size_t i = 0; i < set->n; i++)
        set->rec[i].stage[stage].storage_cpu_s *= factor;
    return 0;
}

int sophon_records_scale_box(sophon_records *set, size_t i, double factor)
{
    int r = sophon_records_scale_storage(set, i, factor);
    if (r < 0)
        return r;
    set->rec[i].stage[SOPHON_STAGE_STORED].client_cpu_s *= factor;
    set->rec[i].stage[SOPHON_STAGE_CROP].client_cpu_s *= factor;
    return 0;
}

int sophon_records_set_crop_bytes(sophon_records *set, size_t i, uint64_t bytes)
{
    if (!set || i >= set->n || bytes == 0)
        return -EINVAL;
    if (set->rec[i].stage[SOPHON_STAGE_CROP].bytes == 0)
        return -ENOENT;
    set->rec[i].stage[SOPHON_STAGE_CROP].bytes = bytes;
    return 0;
}

int sophon_records_copy(sophon_records **out, const sophon_records *set)
{
    sophon_records *c = NULL;
    if (!out || !set)
        return -EINVAL;
    int rc = sophon_records_new(&c);
    for (size_t i = 0; rc == 0 && i < set->n; i++)
        rc = sophon_records_add(c, &set->rec[i]);
    if (rc < 0) {
        sophon_records_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int sophon_records_new(sophon_records **out)
{
    if (!out)
        return -EINVAL;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void sophon_records_free(sophon_records *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++)
        free((char *)set->rec[i].name);
    free(set->rec);
    free(set);
}

uint64_t sophon_stage_bytes(int stage, uint32_t side)
{
    uint64_t px = (uint64_t)side * side;

    if (side == 0)
        return 0;
    switch (stage) {
    case SOPHON_STAGE_U8:
        return px * 3 + SOPHON_SEL_HEADER_BYTES;
    case SOPHON_STAGE_F32:
        return px * 12 + SOPHON_SEL_HEADER_BYTES;
    default:
        return 0;
    }
}

int sophon_records_set_side(sophon_records *set, uint32_t side)
{
    if (!set || side == 0)
        return -EINVAL;
    for (size_t i = 0; i < set->n; i++)
        for (int s = SOPHON_STAGE_U8; s <= SOPHON_STAGE_F32; s++)
            if (set->rec[i].stage[s].bytes > 0)
                set->rec[i].stage[s].bytes = sophon_stage_bytes(s, side);
    return 0;
}

long sophon_records_limit_pixels(sophon_records *set, uint64_t max_pixels)
{
    long n = 0;
    if (!set)
        return -EINVAL;
    for (size_t i = 0; i < set->n; i++) {
        struct sophon_record *r = &set->rec[i];
        if ((uint64_t)r->width * r->height <= max_pixels)
            continue;
        for (int s = SOPHON_STAGE_U8; s < SOPHON_STAGE_COUNT; s++)
            r->stage[s] = (struct sophon_stage_cost){0};
        n++;
    }
    return n;
}

size_t sophon_records_count(const sophon_records *set)
{
    return set ? set->n : 0;
}

const struct sophon_record *sophon_records_get(const sophon_records *set, size_t i)
{
    if (!set || i >= set->n)
        return NULL;
    return &set->rec[i];
}

static int valid_cpu(double s)
{
    return isfinite(s) && s >= 0.0;
}

int sophon_records_add(sophon_records *set, const struct sophon_record *rec)
{
    if (!set || !rec || !rec->name)
        return -EINVAL;
    for (const unsigned char *c = (const unsigned char *)rec->name; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return -EINVAL;
    if (rec->subsampling >= SOPHON_SS_COUNT || rec->progressive > 1)
        return -EINVAL;
    if (rec->stage[SOPHON_STAGE_STORED].bytes != rec->stored_bytes)
        return -EINVAL;
    for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
        if (!valid_cpu(rec->stage[s].storage_cpu_s) || !valid_cpu(rec->stage[s].client_cpu_s))
            return -EINVAL;
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof(*set->rec))
            return -ENOMEM;
        struct sophon_record *r = realloc(set->rec, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        set->rec = r;
        set->cap = cap;
    }
    size_t len = strlen(rec->name);
    char *name = malloc(len + 1);
    if (!name)
        return -ENOMEM;
    memcpy(name, rec->name, len + 1);
    set->rec[set->n] = *rec;
    set->rec[set->n].name = name;
    set->n++;
    return 0;
}

/* ---- CSV writing ---------------------------------------------------------------------------- */

/* Column order of the files we write; the reader accepts any order. */
enum col {
    COL_NAME,
    COL_STORED_BYTES,
    COL_WIDTH,
    COL_HEIGHT,
    COL_COMPONENTS,
    COL_SUBSAMPLING,
    COL_PROGRESSIVE,
    COL_FIXED, /* then 3 per stage */
    COL_COUNT = COL_FIXED + 3 * SOPHON_STAGE_COUNT
};

static const char *const fixed_cols[COL_FIXED] = {
    "name", "stored_bytes", "width", "height", "components", "subsampling", "progressive",
};
static const char *const stage_cols[3] = {"net_bytes", "storage_cpu_s", "client_cpu_s"};

/* Writes the name of column c into buf (size >= 64). */
static void col_name(char *buf, size_t len, int c)
{
    if (c < COL_FIXED)
        snprintf(buf, len, "%s", fixed_cols[c]);
    else
        snprintf(buf, len, "%s_%s", stage_names[(c - COL_FIXED) / 3],
                 stage_cols[(c - COL_FIXED) % 3]);
}

static int needs_quotes(const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return 1; /* an empty name stays distinguishable from a missing field */
    if (s[0] == ' ' || s[0] == '\t' || s[len - 1] == ' ' || s[len - 1] == '\t')
        return 1;
    return strpbrk(s, ",\"") != NULL;
}

static int write_name(FILE *f, const char *s)
{
    if (!needs_quotes(s))
        return fputs(s, f) < 0 ? -EIO : 0;
    if (fputc('"', f) == EOF)
        return -EIO;
    for (; *s; s++) {
        if (*s == '"' && fputc('"', f) == EOF)
            return -EIO;
        if (fputc(*s, f) == EOF)
            return -EIO;
    }
    return fputc('"', f) == EOF ? -EIO : 0;
}

int sophon_records_write_csv(const sophon_records *set, FILE *f)
{
    char buf[64];

    if (!set || !f)
        return -EINVAL;
    for (int c = 0; c < COL_COUNT; c++) {
        col_name(buf, sizeof(buf), c);
        if (fprintf(f, "%s%s", c ? "," : "", buf) < 0)
            return -EIO;
    }
    if (fputc('\n', f) == EOF)
        return -EIO;
    for (size_t i = 0; i < set->n; i++) {
        const struct sophon_record *r = &set->rec[i];
        int rc = write_name(f, r->name);
        if (rc < 0)
            return rc;
        if (fprintf(f, ",%llu,%u,%u,%u,%s,%u", (unsigned long long)r->stored_bytes, r->width,
                    r->height, r->components, sophon_subsampling_name(r->subsampling),
                    r->progressive) < 0)
            return -EIO;
        for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
            if (fprintf(f, ",%llu,%.17g,%.17g", (unsigned long long)r->stage[s].bytes,
                        r->stage[s].storage_cpu_s, r->stage[s].client_cpu_s) < 0)
                return -EIO;
        if (fputc('\n', f) == EOF)
            return -EIO;
    }
    return fflush(f) == 0 ? 0 : -EIO;
}

/* ---- CSV reading ---------------------------------------------------------------------------- */

int sophon__parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9') /* no sign, no blanks */
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

int sophon__parse_seconds(const char *s, double *out)
{
    char *end;
    if (!((*s >= '0' && *s <= '9') || *s == '.'))
        return -EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE && v != 0.0)
        return -EINVAL;
    if (*end || !valid_cpu(v))
        return -EINVAL;
    *out = v;
    return 0;
}

/*
 * Splits line (modified in place) into at most max fields at commas, honouring double quotes
 * ("" is a quote inside a quoted field). Returns the number of fields, or -1 with a reason.
 */
static int split_csv(char *line, char **field, int max, const char **why)
{
    int n = 0;
    char *p = line;

    for (;;) {
        if (n == max) {
            *why = "too many fields";
            return -1;
        }
        if (*p == '"') {
            char *w = ++p;
            field[n++] = w;
            for (;;) {
                if (*p == '\0') {
                    *why = "unterminated quote";
                    return -1;
                }
                if (*p == '"') {
                    if (p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            *w = '\0';
            if (*p != ',' && *p != '\0') {
                *why = "text after a closing quote";
                return -1;
            }
        } else {
            field[n++] = p;
            while (*p && *p != ',') {
                if (*p == '"') {
                    *why = "quote inside an unquoted field";
                    return -1;
                }
                p++;
            }
        }
        if (*p == '\0')
            return n;
        *p++ = '\0';
    }
}

/* Strips a trailing "\n" or "\r\n". */
void sophon__chomp(char *line)
{
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n')
        line[--len] = '\0';
    if (len && line[len - 1] == '\r')
        line[--len] = '\0';
}

static int parse_header(char *line, int *map, char *err, size_t errlen)
{
    char *field[COL_COUNT + 1];
    const char *why = NULL;
    char buf[64];
    int seen[COL_COUNT] = {0};

    int n = split_csv(line, field, COL_COUNT + 1, &why);
    if (n < 0) {
        sophon__seterr(err, errlen, "line 1: header: %s", why);
        return -EBADMSG;
    }
    /* An index written before the crop stage has no crop_* columns. */
    if (n != COL_COUNT && n != COL_COUNT - 3) {
        sophon__seterr(err, errlen, "line 1: header has %d columns, expected %d", n, COL_COUNT);
        return -EBADMSG;
    }
    for (int i = 0; i < n; i++) {
        int c;
        for (c = 0; c < COL_COUNT; c++) {
            col_name(buf, sizeof(buf), c);
            if (strcmp(buf, field[i]) == 0)
                break;
        }
        if (c == COL_COUNT) {
            sophon__seterr(err, errlen, "line 1: unknown column '%.40s'", field[i]);
            return -EBADMSG;
        }
        if (seen[c]++) {
            sophon__seterr(err, errlen, "line 1: column '%.40s' twice", field[i]);
            return -EBADMSG;
        }
        map[i] = c;
    }
    if (n == COL_COUNT - 3)
        for (int c = COL_FIXED + 3 * SOPHON_STAGE_CROP; c < COL_FIXED + 3 * SOPHON_STAGE_CROP + 3;
             c++)
            if (seen[c]) {
                sophon__seterr(err, errlen, "line 1: some crop_* columns but not all three");
                return -EBADMSG;
            }
    return n;
}

/* A decimal of at most max into a narrower field, written only when the whole field parsed. */
static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    uint64_t v;
    int rc = sophon__parse_u64(s, max, &v);
    if (rc == 0)
        *out = (uint32_t)v;
    return rc;
}

static int parse_u8(const char *s, uint8_t max, uint8_t *out)
{
    uint64_t v;
    int rc = sophon__parse_u64(s, max, &v);
    if (rc == 0)
        *out = (uint8_t)v;
    return rc;
}

static int parse_row(char *line, const int *map, int ncols, struct sophon_record *r,
                     const char **why)
{
    char *field[COL_COUNT + 1];

    int n = split_csv(line, field, COL_COUNT + 1, why);
    if (n < 0)
        return -1;
    if (n != ncols) {
        *why = "wrong number of fields";
        return -1;
    }
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < n; i++) {
        const char *f = field[i];
        int c = map[i];
        int bad = 0;
        switch (c) {
        case COL_NAME:
            r->name = f;
            break;
        case COL_STORED_BYTES:
            bad = sophon__parse_u64(f, UINT64_MAX, &r->stored_bytes);
            break;
        case COL_WIDTH:
            bad = parse_u32(f, UINT32_MAX, &r->width);
            break;
        case COL_HEIGHT:
            bad = parse_u32(f, UINT32_MAX, &r->height);
            break;
        case COL_COMPONENTS:
            bad = parse_u8(f, 4, &r->components);
            break;
        case COL_PROGRESSIVE:
            bad = parse_u8(f, 1, &r->progressive);
            break;
        case COL_SUBSAMPLING: {
            int ss = sophon_subsampling_from_name(f);
            bad = ss < 0;
            r->subsampling = (uint8_t)(ss < 0 ? SOPHON_SS_COUNT : ss);
            break;
        }
        default: {
            struct sophon_stage_cost *sc = &r->stage[(c - COL_FIXED) / 3];
            switch ((c - COL_FIXED) % 3) {
            case 0:
                bad = sophon__parse_u64(f, UINT64_MAX, &sc->bytes);
                break;
            case 1:
                bad = sophon__parse_seconds(f, &sc->storage_cpu_s);
                break;
            default:
                bad = sophon__parse_seconds(f, &sc->client_cpu_s);
                break;
            }
        }
        }
        if (bad) {
            *why = "bad value";
            return -(i + 2); /* field index + 2 so that 0 and -1 stay distinct */
        }
    }
    return 0;
}

int sophon_records_read_csv(sophon_records **out, FILE *f, char *err, size_t errlen)
{
    sophon_records *set = NULL;
    char *line = NULL;
    size_t cap = 0;
    size_t lineno = 0;
    int map[COL_COUNT];
    char colbuf[64];
    int rc;

    if (!out || !f)
        return -EINVAL;
    *out = NULL;
    rc = sophon_records_new(&set);
    if (rc < 0)
        goto done;
    errno = 0;
    if (getline(&line, &cap, f) < 0) {
        rc = ferror(f) ? -EIO : -EBADMSG;
        sophon__seterr(err, errlen, "line 1: %s", rc == -EIO ? "read error" : "no header");
        goto done;
    }
    lineno = 1;
    sophon__chomp(line);
    rc = parse_header(line, map, err, errlen);
    if (rc < 0)
        goto done;
    int ncols = rc;
    for (;;) {
        struct sophon_record r;
        const char *why = NULL;
        if (getline(&line, &cap, f) < 0)
            break;
        lineno++;
        sophon__chomp(line);
        int prc = parse_row(line, map, ncols, &r, &why);
        if (prc < -1) {
            col_name(colbuf, sizeof(colbuf), map[-prc - 2]);
            sophon__seterr(err, errlen, "line %zu: %s in column %s", lineno, why, colbuf);
            rc = -EBADMSG;
            goto done;
        }
        if (prc < 0) {
            sophon__seterr(err, errlen, "line %zu: %s", lineno, why);
            rc = -EBADMSG;
            goto done;
        }
        rc = sophon_records_add(set, &r);
        if (rc == -EINVAL) {
            sophon__seterr(err, errlen, "line %zu: inconsistent record '%.40s'", lineno, r.name);
            rc = -EBADMSG;
        }
        if (rc < 0)
            goto done;
    }
    if (ferror(f)) {
        sophon__seterr(err, errlen, "line %zu: read error", lineno + 1);
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
