/*
 * read_file.c - see read_file.h.
 */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int sophon_test_read_file(const char *path, uint8_t **out, size_t *len, size_t max)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    int rc = -EIO;

    *out = NULL;
    *len = 0;
    if (f == NULL)
        return -errno;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto done;
    if (max > 0 && (unsigned long)n > max) {
        rc = -EFBIG;
        goto done;
    }
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto done;
    }
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        goto done;
    *out = buf;
    *len = (size_t)n;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    fclose(f);
    return rc;
}
