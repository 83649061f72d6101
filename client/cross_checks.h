/*
 * cross_checks.h - what prep/, the selector and libsophon's public header each define, and must
 * agree on. Internal. The three do not include one another (the selector is pure computation,
 * sophon.h is installed alone), so the client, which sees all of them, holds them together here
 * at compile time; the files that convert between them include it.
 */
#ifndef SOPHON_CROSS_CHECKS_H
#define SOPHON_CROSS_CHECKS_H

#include "prep.h"
#include "selector.h"
#include "sophon.h"
#include "wire.h"

/* Each enumerator of the other enum is compared as an int: -Wenum-compare rightly warns of
 * comparing two enums, which is the point here. */

/* One pair of sample formats under three names: a value of one enum is the same value of each. */
_Static_assert(SOPHON_SAMPLE_U8 == (int)SOPHON_FORMAT_U8 &&
                   SOPHON_SAMPLE_F32 == (int)SOPHON_FORMAT_F32,
               "sophon.h's sample formats are prep's output formats");
_Static_assert(SOPHON_FINAL_U8 == (int)SOPHON_FORMAT_U8 &&
                   SOPHON_FINAL_F32 == (int)SOPHON_FORMAT_F32,
               "the selector's final formats are prep's output formats");

/* The selector's byte figures are those of the responses the loader asks for. */
_Static_assert(SOPHON_SEL_HEADER_BYTES == SOPHON_RESPONSE_HDR_LEN,
               "the selector counts wire.h's response header");
_Static_assert(SOPHON_SEL_SIDE == SOPHON_LOADER_SIDE,
               "the selector plans for the samples the loader delivers");

/* The loader's by-stage statistics are indexed by the selector's stages. */
_Static_assert(SOPHON_LOADER_STAGE_STORED == (int)SOPHON_STAGE_STORED &&
                   SOPHON_LOADER_STAGE_U8 == (int)SOPHON_STAGE_U8 &&
                   SOPHON_LOADER_STAGE_F32 == (int)SOPHON_STAGE_F32 &&
                   SOPHON_LOADER_STAGE_CROP == (int)SOPHON_STAGE_CROP &&
                   SOPHON_LOADER_STAGE_COUNT == (int)SOPHON_STAGE_CROP &&
                   SOPHON_STAGE_CROP + 1 == SOPHON_STAGE_COUNT,
               "sophon.h's loader stages are the selector's stages");

#endif /* SOPHON_CROSS_CHECKS_H */
