/*
 * read_file.h - reading a whole file into memory, for the test and benchmark tools.
 */
#ifndef SOPHON_TEST_READ_FILE_H
#define SOPHON_TEST_READ_FILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reads the file at path into a malloc'ed buffer (*out, freed with free(); at least one byte is
 * allocated, so an empty file gives a valid pointer and *len 0). max bounds the size (0: none).
 * Returns 0, -errno from fopen, -EFBIG over max, -ENOMEM, or -EIO.
 */
int sophon_test_read_file(const char *path, uint8_t **out, size_t *len, size_t max);

#endif
