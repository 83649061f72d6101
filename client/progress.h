/*
 * progress.h - a progress bar on stderr for long work, drawn only when stderr is a terminal.
 */
#ifndef SOPHON_PROGRESS_H
#define SOPHON_PROGRESS_H

#include <stdint.h>

struct progress {
    const char *what; /* "put", "profile", ... */
    uint64_t total;   /* items expected, 0 if unknown */
    uint64_t done;    /* items finished */
    uint64_t bytes;   /* bytes moved so far */
    double t0, last;  /* monotonic seconds */
    int tty;
};

void progress_start(struct progress *p, const char *what, uint64_t total);
/* Adds items and bytes; redraws at most ten times a second. */
void progress_add(struct progress *p, uint64_t items, uint64_t bytes);
/* Clears the bar; returns the seconds since progress_start(). */
double progress_end(struct progress *p);
double progress_now(void);

#endif
