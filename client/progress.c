/*
 * progress.c - the progress bar.
 */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_start(struct progress *p, const char *what, uint64_t total)
{
    p->what = what;
    p->total = total;
    p->done = 0;
    p->bytes = 0;
    p->t0 = p->last = progress_now();
    p->tty = isatty(STDERR_FILENO);
}

static void draw(struct progress *p, double now)
{
    enum { WIDTH = 30 };
    double secs = now - p->t0 > 1e-9 ? now - p->t0 : 1e-9;
    char bar[WIDTH + 1];
    int fill = p->total > 0 ? (int)((double)p->done / (double)p->total * WIDTH) : 0;
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%s [%s] %llu/%llu, %.1f MB, %.1f MB/s, %.0f/s  ", p->what, bar,
            (unsigned long long)p->done, (unsigned long long)p->total, (double)p->bytes / 1e6,
            (double)p->bytes / 1e6 / secs, (double)p->done / secs);
    fflush(stderr);
}

void progress_add(struct progress *p, uint64_t items, uint64_t bytes)
{
    p->done += items;
    p->bytes += bytes;
    if (!p->tty)
        return;
    double now = progress_now();
    if (now - p->last >= 0.1 || p->done == p->total) {
        p->last = now;
        draw(p, now);
    }
}

double progress_end(struct progress *p)
{
    if (p->tty)
        fputs("\r\033[K", stderr);
    return progress_now() - p->t0;
}
