/*
 * errtext.c - the one-line error messages every component writes into its caller's err buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "sophon_common.h"

void sophon__seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
