/*
 * fuzz_prep.c - libFuzzer target for sophon_probe + sophon_prep_run.
 *
 * Input: the 13-byte parameter header of fuzz_params.h (outputs up to 256 x 256), then the
 * JPEG.
 * Seeds in corpus_prep/ are that header + a tiny JPEG (hence .bin, not .jpg).
 * Every output byte is read after a successful run so that ASan checks the whole buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_params.h"
#include "prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sophon_prep_params p;
    /* Smaller than the defaults so a run stays fast and small under the sanitizers. */
    struct sophon_limits lim = {4u << 20, 64, 8u << 20, SOPHON_MAX_OBJECT_BYTES};
    const uint8_t *jpeg;
    size_t len, n, i;
    uint8_t *out;
    volatile uint8_t sink = 0;
    char err[128];

    if (fuzz_params(&p, &jpeg, &len, data, size, 256) < 0)
        return 0;
    n = (size_t)sophon_prep_output_size(&p);
    out = malloc(n);
    if (out == NULL)
        return 0;
    if (sophon_prep_run(out, n, jpeg, len, &p, &lim, err, sizeof(err)) == 0) {
        for (i = 0; i < n; i++)
            sink ^= out[i];
    }
    (void)sink;
    free(out);
    return 0;
}
