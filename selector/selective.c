/*
 * selective.c - per-object stages that minimize the modelled epoch time.
 *
 * The problem. Object i at stage s adds a_is^r seconds to resource r (network, storage CPU,
 * client CPU: bytes / bandwidth, storage CPU / storage capacity, client CPU / client cores).
 * Choose one stage per object to minimize max(G, max_r sum_i a_{i,s_i}^r), G the GPU's constant
 * time. This is a min-max multiple-choice problem (NP-hard in general, like partition), but it
 * has only three coupling constraints, which makes its LP relaxation nearly integral:
 *
 *     (P)  min T  s.t.  sum_i sum_s x_is a_is^r <= T  (r = 1..3),  sum_s x_is = 1,  x >= 0.
 *
 * 1. Column generation (Dantzig-Wolfe) solves (P). A column is a whole integral assignment,
 *    summarized by its load vector g in R^3. The master problem mixes the columns found so far:
 *    min T s.t. sum_k mu_k g_k <= T, sum mu = 1, mu >= 0; with nu = mu / T it becomes
 *    max sum nu s.t. sum_k nu_k g_k <= 1, nu >= 0 (a 3-row LP, solved by a primal simplex with
 *    Bland's rule, warm-started as columns arrive). Its dual y gives resource weights
 *    lambda = y / sum(y) on the simplex; pricing picks, per object, the stage minimizing
 *    lambda . a_is (O(n * stages)), which yields a new column and the Lagrangian bound
 *    L(lambda) = sum_i min_s lambda . a_is <= T_LP (weak duality: lambda . load <= max load).
 *    We stop when the priced column cannot improve the master (lambda . g >= T_master up to
 *    1e-12 relative) or after MAX_ROUNDS rounds; then T_master >= T_LP >= L, and
 *    lower_bound_s = max(G, best L) <= T_OPT.
 *
 * 2. Purification to a basic solution. The master's basis holds at most 3 columns, so
 *    x = sum_k mu_k A_k is a fractional assignment with loads <= T_master. Call a sample
 *    fractional when its support has more than one stage; each extra stage of its support is
 *    one "direction" d = a_{i,s} - a_{i,s0} (moving weight from s0 to s). Any 4 directions in
 *    R^3 are linearly dependent: a null combination theta moves weight along them without
 *    changing any load, and moving until a weight reaches 0 removes a support entry. Repeating
 *    while 4 directions exist ends with sum over fractional samples of (|support| - 1) <= 3,
 *    hence at most 3 fractional samples F, and loads still <= T_master.
 *
 * 3. Rounding, with a proof of its bound. For i in F we try every choice s_i in support(i)
 *    (at most 8 combinations) and keep the best. For any such choice and every resource r,
 *        load_r(rounded) = load_r(x) + sum_{i in F} (a_{i,s_i}^r - sum_s x_is a_is^r)
 *                       <= T_master + sum_{i in F} (max_{s in supp i} a_is^r - min_{s in supp i}
 * a_is^r)
 *                       =: T_master + Delta_r,
 *    because a convex combination is at least its minimum. Since max(G, .) is monotone and
 *    1-Lipschitz, T_sel <= max(G, T_master) + max_r Delta_r =: lp_s + rounding_bound_s, and
 *    T_OPT >= lower_bound_s. With converged column generation T_master = T_LP <= T_OPT, so
 *        T_sel <= T_OPT + max_r Delta_r <= T_OPT + 3 * max_{i,s,s',r} |a_is^r - a_is'^r|:
 *    the loss is at most three objects' worth of one resource, whatever n is (at 40k objects
 *    and a 90 s epoch, a few milliseconds).
 *
 * 4. Local search only lowers the epoch: single-object moves (and pair moves for small n)
 *    accepted when they lower the sorted load vector lexicographically (a strict order, so it
 *    terminates), and the caller keeps the best of this plan, sophon's and the static ones.
 *
 * 5. Branching on the fractional samples. The bound of step 3 is small against the epoch when
 *    every object is, but one large object (a 16 MB photo among 289, a third of the epoch's OSD
 *    CPU when offloaded) can be the LP's split sample where all three resources bind, and
 *    rounding it either way moves the loads by its size, which single moves of small objects
 *    do not take back (plans 5-15% over the LP bound on the photos dataset). When the plan after
 *    step 4 is more than BRANCH_GAP over the LP's value, each combination of the fractional
 *    samples' support stages (at most 8) is fixed in a copy of the problem, the rest solved
 *    again from step 1 (branching again, BRANCH_DEPTH levels in all, one for very large n),
 *    and the best plan after a local search kept. The bound of step 3 still holds: the first
 *    rounding is among those compared.
 *
 * Determinism: no randomness, fixed iteration order, ties broken by the lower stage and then
 * the lower index; the same problem gives the same plan bit for bit.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "selector_internal.h"

#define S          SOPHON_STAGE_COUNT
#define R          SOPHON__RES
#define MAX_ROUNDS 400
#define MAX_COLS   (MAX_ROUNDS + 8)
#define EPS        1e-12
#define GAP        1e-9 /* relative optimality gap at which column generation stops */
#define BRANCH_GAP 1e-3 /* step 5 runs when the rounded plan is this much over the LP */
/* Levels of step 5: two (at most 1 + 8 + 64 solves; 1.1 s at 40,000 objects when every one
 * branches), one above BRANCH_WIDE_N objects, where three objects' rounding rarely reaches
 * BRANCH_GAP and 73 solves would take a minute. */
#define BRANCH_DEPTH  2
#define BRANCH_WIDE_N 200000

static inline const double *cost(const struct sophon__problem *p, size_t i, int s)
{
    return p->a + (i * S + (size_t)s) * R;
}

static inline int possible(const double *a)
{
    return isfinite(a[0]);
}

void sophon__loads(const struct sophon__problem *p, const uint8_t *stage, double load[3])
{
    load[0] = load[1] = load[2] = 0.0;
    for (size_t i = 0; i < p->n; i++) {
        const double *a = cost(p, i, stage[i]);
        load[0] += a[0];
        load[1] += a[1];
        load[2] += a[2];
    }
}

double sophon__objective(const struct sophon__problem *p, const double load[3])
{
    return fmax(p->gpu_s, fmax(load[0], fmax(load[1], load[2])));
}

/* Per object, the possible stage minimizing w . a (ties: the lower stage). Loads into g. */
static void price(const struct sophon__problem *p, const double w[R], uint8_t *stage, double g[R])
{
    double g0 = 0, g1 = 0, g2 = 0;
    for (size_t i = 0; i < p->n; i++) {
        const double *a = cost(p, i, 0);
        int best = -1;
        double bc = INFINITY;
        for (int s = 0; s < S; s++, a += R) {
            if (!possible(a))
                continue;
            double c = w[0] * a[0] + w[1] * a[1] + w[2] * a[2];
            if (best < 0 || c < bc) {
                bc = c;
                best = s;
            }
        }
        a = cost(p, i, best);
        g0 += a[0];
        g1 += a[1];
        g2 += a[2];
        if (stage)
            stage[i] = (uint8_t)best;
    }
    g[0] = g0;
    g[1] = g1;
    g[2] = g2;
}

/*
 * The master LP max sum nu s.t. sum_k nu_k g_k <= 1, nu >= 0 as a dense tableau with 3 rows.
 * Columns 0..2 are the slacks (so B^-1 is always t[.][0..2]); column 3 + k is column k.
 */
struct master {
    int ncol;
    int basic[R];
    double t[R][R + MAX_COLS];
    double rhs[R];
    double obj[R + MAX_COLS]; /* reduced costs c_j - c_B B^-1 A_j; enter when > EPS */
};

static void master_init(struct master *m)
{
    memset(m, 0, sizeof(*m));
    m->ncol = R;
    for (int r = 0; r < R; r++) {
        m->basic[r] = r;
        m->t[r][r] = 1.0;
        m->rhs[r] = 1.0;
    }
}

static double cbasic(const struct master *m, int r)
{
    return m->basic[r] >= R ? 1.0 : 0.0;
}

static void master_add(struct master *m, const double g[R])
{
    int c = m->ncol++;
    double z = 0;
    for (int r = 0; r < R; r++) {
        double v = 0;
        for (int j = 0; j < R; j++)
            v += m->t[r][j] * g[j];
        m->t[r][c] = v;
        z += cbasic(m, r) * v;
    }
    m->obj[c] = 1.0 - z;
}

/* Primal simplex with Bland's rule (no cycling). The master is bounded when every column has
 * a positive component, which the caller guarantees. */
static void master_solve(struct master *m)
{
    for (int guard = 0; guard < 10000; guard++) {
        int enter = -1;
        for (int c = 0; c < m->ncol; c++)
            if (m->obj[c] > EPS) {
                enter = c;
                break;
            }
        if (enter < 0)
            return;
        int leave = -1;
        double best = INFINITY;
        for (int r = 0; r < R; r++) {
            if (m->t[r][enter] <= EPS)
                continue;
            double ratio = m->rhs[r] / m->t[r][enter];
            if (leave < 0 || ratio < best || (ratio == best && m->basic[r] < m->basic[leave])) {
                best = ratio;
                leave = r;
            }
        }
        if (leave < 0)
            return; /* unbounded: cannot happen with positive columns */
        double piv = m->t[leave][enter];
        for (int c = 0; c < m->ncol; c++)
            m->t[leave][c] /= piv;
        m->rhs[leave] /= piv;
        for (int r = 0; r < R; r++) {
            if (r == leave)
                continue;
            double f = m->t[r][enter];
            if (f == 0.0)
                continue;
            for (int c = 0; c < m->ncol; c++)
                m->t[r][c] -= f * m->t[leave][c];
            m->rhs[r] -= f * m->rhs[leave];
        }
        double f = m->obj[enter];
        for (int c = 0; c < m->ncol; c++)
            m->obj[c] -= f * m->t[leave][c];
        m->basic[leave] = enter;
    }
}

/* A null vector of the 3 x 4 matrix d (columns are directions), by Gauss-Jordan elimination
 * with partial pivoting; a column whose pivot is below tol is free. */
static void null_vector(double d[R][4], double theta[4])
{
    int pivcol[R];
    int rank = 0;
    double scale = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 4; c++)
            scale = fmax(scale, fabs(d[r][c]));
    double tol = 1e-12 * scale;
    int free_col = -1;
    for (int c = 0; c < 4 && free_col < 0; c++) {
        int piv = -1;
        for (int r = rank; r < R; r++)
            if (piv < 0 || fabs(d[r][c]) > fabs(d[piv][c]))
                piv = r;
        if (piv < 0 || fabs(d[piv][c]) <= tol) {
            free_col = c;
            break;
        }
        for (int k = 0; k < 4; k++) {
            double t = d[rank][k];
            d[rank][k] = d[piv][k];
            d[piv][k] = t;
        }
        for (int k = 0; k < 4; k++)
            if (k != c)
                d[rank][k] /= d[rank][c];
        d[rank][c] = 1.0;
        for (int r = 0; r < R; r++) {
            if (r == rank || d[r][c] == 0.0)
                continue;
            double f = d[r][c];
            for (int k = 0; k < 4; k++)
                d[r][k] -= f * d[rank][k];
        }
        pivcol[rank++] = c;
    }
    if (free_col < 0)
        free_col = 3; /* rank 3 after three pivots: the last column is free */
    memset(theta, 0, 4 * sizeof(double));
    theta[free_col] = 1.0;
    for (int r = 0; r < rank; r++)
        if (pivcol[r] < free_col)
            theta[pivcol[r]] = -d[r][free_col];
}

/* A fractional sample: its support stages and weights. */
struct frac {
    size_t i;
    int ns;
    uint8_t st[S];
    double w[S];
};

/* Removes support entries with weight 0; returns 1 when the sample became integral. */
static int frac_compact(struct frac *f)
{
    int k = 0;
    for (int j = 0; j < f->ns; j++)
        if (f->w[j] > 0.0) {
            f->st[k] = f->st[j];
            f->w[k++] = f->w[j];
        }
    f->ns = k;
    return k <= 1;
}

/* Step 2 of the top comment: returns the new number of fractional samples; a sample that
 * becomes integral gets its remaining stage in stage[]. */
static size_t purify(const struct sophon__problem *p, struct frac *fr, size_t nf, uint8_t *stage)
{
    for (;;) {
        int ent[4], idx[4], nd = 0;
        for (size_t e = 0; e < nf && nd < 4; e++)
            for (int j = 1; j < fr[e].ns && nd < 4; j++) {
                ent[nd] = (int)e;
                idx[nd++] = j;
            }
        if (nd < 4)
            return nf;
        double d[R][4], theta[4];
        for (int k = 0; k < 4; k++) {
            const struct frac *f = &fr[ent[k]];
            const double *a1 = cost(p, f->i, f->st[idx[k]]), *a0 = cost(p, f->i, f->st[0]);
            for (int r = 0; r < R; r++)
                d[r][k] = a1[r] - a0[r];
        }
        null_vector(d, theta);
        /* Rates of change of each touched weight; the first entry of each sample pays. */
        double rate[4][S];
        memset(rate, 0, sizeof(rate));
        int ents[4], ne = 0;
        for (int k = 0; k < 4; k++) {
            int s = -1;
            for (int q = 0; q < ne; q++)
                if (ents[q] == ent[k])
                    s = q;
            if (s < 0) {
                s = ne;
                ents[ne++] = ent[k];
            }
            rate[s][idx[k]] += theta[k];
            rate[s][0] -= theta[k];
        }
        /* Move in whichever sign reaches a bound first among negative rates. */
        for (int sign = 0; sign < 2; sign++) {
            double tmax = INFINITY;
            int hq = -1, hj = -1;
            for (int q = 0; q < ne; q++)
                for (int j = 0; j < fr[ents[q]].ns; j++)
                    if (rate[q][j] < 0 && fr[ents[q]].w[j] / -rate[q][j] < tmax) {
                        tmax = fr[ents[q]].w[j] / -rate[q][j];
                        hq = q;
                        hj = j;
                    }
            if (hq < 0) {
                for (int q = 0; q < ne; q++)
                    for (int j = 0; j < S; j++)
                        rate[q][j] = -rate[q][j];
                continue;
            }
            for (int q = 0; q < ne; q++) {
                struct frac *f = &fr[ents[q]];
                for (int j = 0; j < f->ns; j++) {
                    f->w[j] += rate[q][j] * tmax;
                    if (f->w[j] < 1e-15)
                        f->w[j] = 0.0;
                }
            }
            fr[ents[hq]].w[hj] = 0.0;
            break;
        }
        /* Drop samples that became integral, highest entry first: the swap with the last entry
         * then never moves a touched entry that is still to be examined. */
        for (int q = 0; q < ne; q++)
            for (int u = q + 1; u < ne; u++)
                if (ents[u] > ents[q]) {
                    int t = ents[q];
                    ents[q] = ents[u];
                    ents[u] = t;
                }
        for (int q = 0; q < ne; q++)
            if (frac_compact(&fr[ents[q]])) {
                stage[fr[ents[q]].i] = fr[ents[q]].st[0];
                fr[ents[q]] = fr[--nf];
            }
    }
}

/* The sorted (descending) loads; a < b lexicographically with a relative tolerance. */
static void sort3(const double l[R], double out[R])
{
    out[0] = l[0];
    out[1] = l[1];
    out[2] = l[2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (out[j] < out[j + 1]) {
                double t = out[j];
                out[j] = out[j + 1];
                out[j + 1] = t;
            }
}

static int better(const double a[R], const double b[R])
{
    double sa[R], sb[R];
    sort3(a, sa);
    sort3(b, sb);
    double tol = 1e-12 * fmax(sb[0], 1e-300);
    for (int r = 0; r < R; r++) {
        if (sa[r] < sb[r] - tol)
            return 1;
        if (sa[r] > sb[r] + tol)
            return 0;
    }
    return 0;
}

/* Step 4: first-improvement local search on single moves, then pair moves for small n. */
static void local_search(const struct sophon__problem *p, uint8_t *stage, double load[R])
{
    size_t n = p->n;
    int max_pass = n <= 10000 ? 1000 : 3;
    for (int pass = 0; pass < max_pass; pass++) {
        int improved = 0;
        for (size_t i = 0; i < n; i++) {
            const double *a0 = cost(p, i, stage[i]);
            for (int s = 0; s < S; s++) {
                const double *a1 = cost(p, i, s);
                if (s == stage[i] || !possible(a1))
                    continue;
                double nl[R];
                for (int r = 0; r < R; r++)
                    nl[r] = load[r] - a0[r] + a1[r];
                if (better(nl, load)) {
                    memcpy(load, nl, sizeof(nl));
                    stage[i] = (uint8_t)s;
                    a0 = a1;
                    improved = 1;
                }
            }
        }
        if (n <= 256) {
            for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                    for (int si = 0; si < S; si++)
                        for (int sj = 0; sj < S; sj++) {
                            const double *ai0 = cost(p, i, stage[i]), *aj0 = cost(p, j, stage[j]);
                            const double *ai1 = cost(p, i, si), *aj1 = cost(p, j, sj);
                            if ((si == stage[i] && sj == stage[j]) || !possible(ai1) ||
                                !possible(aj1))
                                continue;
                            double nl[R];
                            for (int r = 0; r < R; r++)
                                nl[r] = load[r] - ai0[r] - aj0[r] + ai1[r] + aj1[r];
                            if (better(nl, load)) {
                                memcpy(load, nl, sizeof(nl));
                                stage[i] = (uint8_t)si;
                                stage[j] = (uint8_t)sj;
                                improved = 1;
                            }
                        }
        }
        if (!improved)
            break;
    }
}

/* Step 1's state: the master LP, the columns found so far and the bounds. */
struct colgen {
    struct master m;
    double colw[MAX_COLS][R]; /* the resource weights each column was priced with */
    int ncols;
    double scale;   /* the loads are divided by it in the master (the first column's max) */
    double tmaster; /* the master's value, scaled */
    double best_lb; /* the best Lagrangian bound, scaled */
    unsigned rounds;
};

/* A column to the master: the assignment priced with weights w, whose loads are g. */
static void add_column(struct colgen *cg, const double w[R], const double g[R])
{
    memcpy(cg->colw[cg->ncols++], w, sizeof(cg->colw[0]));
    double sg[R] = {g[0] / cg->scale, g[1] / cg->scale, g[2] / cg->scale};
    master_add(&cg->m, sg);
}

/* The single-resource columns and the balanced one, which every run starts from. */
static const double start_columns[4][R] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};

/*
 * Step 1 of the top comment: column generation until the priced column cannot improve the
 * master, or MAX_ROUNDS. Returns 0, or 1 when every load is zero (any priced column is optimal,
 * T = 0, and there is nothing to solve).
 */
static int solve_lp(const struct sophon__problem *p, struct colgen *cg)
{
    double g[R], lambda[R] = {1, 0, 0};

    master_init(&cg->m);
    cg->ncols = 0;
    cg->best_lb = 0;
    cg->rounds = 0;
    for (int k = 0; k < 4; k++) {
        price(p, start_columns[k], NULL, g);
        if (k == 0)
            cg->scale = fmax(g[0], fmax(g[1], g[2]));
        if (cg->scale <= 0)
            return 1;
        add_column(cg, start_columns[k], g);
    }
    for (;;) {
        master_solve(&cg->m);
        double v = 0;
        for (int r = 0; r < R; r++)
            if (cg->m.basic[r] >= R)
                v += cg->m.rhs[r];
        cg->tmaster = 1.0 / v;
        double y[R], ysum = 0;
        for (int r = 0; r < R; r++) {
            y[r] = fmax(0.0, -cg->m.obj[r]);
            ysum += y[r];
        }
        for (int r = 0; r < R; r++)
            lambda[r] = ysum > 0 ? y[r] / ysum : 1.0 / R;
        if (cg->rounds >= MAX_ROUNDS || cg->ncols >= MAX_COLS)
            return 0;
        price(p, lambda, NULL, g);
        cg->rounds++;
        double lb = (lambda[0] * g[0] + lambda[1] * g[1] + lambda[2] * g[2]) / cg->scale;
        cg->best_lb = fmax(cg->best_lb, lb);
        if (cg->best_lb >= cg->tmaster * (1.0 - GAP))
            return 0;
        add_column(cg, lambda, g);
    }
}

/*
 * Step 2's start: x = sum_k mu_k A_k over the master's basic columns. Samples on which the
 * columns agree get that stage in stage[]; the others, with their support and weights, go to
 * *fr (*nf of them, the caller frees it). Returns 0, 1 when the basis holds no column (cannot
 * happen: the master's value is positive), -ENOMEM.
 */
static int basic_mixture(const struct sophon__problem *p, const struct colgen *cg, uint8_t *asg,
                         uint8_t *stage, struct frac **fr, size_t *nf)
{
    size_t n = p->n, capf = 0;
    double mu[R], g[R];
    int nb = 0;

    for (int r = 0; r < R; r++) {
        if (cg->m.basic[r] < R || cg->m.rhs[r] <= 0)
            continue;
        mu[nb] = cg->m.rhs[r] * cg->tmaster;
        price(p, cg->colw[cg->m.basic[r] - R], asg + (size_t)nb * n, g);
        nb++;
    }
    if (nb == 0)
        return 1;
    *nf = 0;
    for (size_t i = 0; i < n; i++) {
        int diff = 0;
        for (int k = 1; k < nb; k++)
            diff |= asg[(size_t)k * n + i] != asg[i];
        stage[i] = asg[i];
        if (!diff)
            continue;
        if (*nf == capf) {
            capf = capf ? 2 * capf : 64;
            struct frac *t = realloc(*fr, capf * sizeof(**fr));
            if (!t)
                return -ENOMEM;
            *fr = t;
        }
        struct frac *f = &(*fr)[(*nf)++];
        memset(f, 0, sizeof(*f));
        f->i = i;
        for (int k = 0; k < nb; k++) {
            int s = asg[(size_t)k * n + i], j;
            for (j = 0; j < f->ns && f->st[j] != s; j++)
                ;
            if (j == f->ns) {
                f->st[f->ns] = (uint8_t)s;
                f->w[f->ns++] = 0;
            }
            f->w[j] += mu[k];
        }
    }
    return 0;
}

/* The next combination of support stages of fr[0..nf) in pick[] (an odometer, the first sample
 * turning fastest): 1, or 0 when every one has been visited and pick[] is back at all zeros. */
static int next_pick(int pick[3], const struct frac *fr, size_t nf)
{
    for (size_t e = 0; e < nf; e++) {
        if (++pick[e] < fr[e].ns)
            return 1;
        pick[e] = 0;
    }
    return 0;
}

/*
 * Step 3 of the top comment: the bound Delta of rounding the (at most 3) fractional samples
 * fr[0..nf), then the best of their rounding choices (every combination of support stages) into
 * stage[].
 */
static void round_fractional(const struct sophon__problem *p, const struct frac *fr, size_t nf,
                             uint8_t *stage, struct sophon_plan *plan)
{
    double delta[R] = {0, 0, 0}, load[R];

    plan->fractional = nf;
    for (size_t e = 0; e < nf; e++) {
        stage[fr[e].i] = fr[e].st[0];
        for (int r = 0; r < R; r++) {
            double lo = INFINITY, hi = -INFINITY;
            for (int j = 0; j < fr[e].ns; j++) {
                double v = cost(p, fr[e].i, fr[e].st[j])[r];
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
            delta[r] += hi - lo;
        }
    }
    plan->rounding_bound_s = fmax(delta[0], fmax(delta[1], delta[2]));
    sophon__loads(p, stage, load);
    if (nf == 0 || nf > 3)
        return;
    int pick[3] = {0, 0, 0}, best[3] = {0, 0, 0};
    double bestl[R];
    memcpy(bestl, load, sizeof(bestl));
    while (next_pick(pick, fr, nf)) {
        double nl[R];
        memcpy(nl, load, sizeof(nl));
        for (size_t q = 0; q < nf; q++) {
            const double *a0 = cost(p, fr[q].i, fr[q].st[0]);
            const double *a1 = cost(p, fr[q].i, fr[q].st[pick[q]]);
            for (int r = 0; r < R; r++)
                nl[r] += a1[r] - a0[r];
        }
        if (better(nl, bestl)) {
            memcpy(bestl, nl, sizeof(bestl));
            memcpy(best, pick, sizeof(best));
        }
    }
    for (size_t q = 0; q < nf; q++)
        stage[fr[q].i] = fr[q].st[best[q]];
}

static int solve(const struct sophon__problem *p, uint8_t *stage, struct sophon_plan *plan,
                 int depth);

/*
 * Step 5: each combination of the fractional samples' support stages fixed (their other stages
 * made impossible in one copy of the problem, restored after each) and the rest solved again,
 * branching depth - 1 further; stage[] and load[] become the best (lexicographically, as
 * local_search) of what they held and every branch's plan after a local search with everything
 * free. Returns 0 or -ENOMEM.
 */
static int branch(const struct sophon__problem *p, const struct frac *fr, size_t nf, uint8_t *stage,
                  double load[R], int depth)
{
    size_t n = p->n, size = n * S * R * sizeof(double);
    struct sophon__problem q = *p;
    uint8_t *st = malloc(n ? n : 1);
    int pick[3] = {0, 0, 0}, rc = 0;

    q.a = malloc(size ? size : 1);
    if (!q.a || !st) {
        rc = -ENOMEM;
        goto done;
    }
    memcpy(q.a, p->a, size);
    do {
        for (size_t e = 0; e < nf; e++)
            for (int s = 0; s < S; s++)
                if (s != fr[e].st[pick[e]])
                    for (int r = 0; r < R; r++)
                        q.a[(fr[e].i * S + (size_t)s) * R + (size_t)r] = INFINITY;
        struct sophon_plan scratch;
        double nl[R];
        memset(&scratch, 0, sizeof(scratch));
        rc = solve(&q, st, &scratch, depth);
        if (rc < 0)
            goto done;
        sophon__loads(p, st, nl);
        local_search(p, st, nl);
        if (better(nl, load)) {
            memcpy(stage, st, n);
            memcpy(load, nl, sizeof(nl));
        }
        /* Only the fixed samples' rows differ from p: put them back. */
        for (size_t e = 0; e < nf; e++)
            memcpy(q.a + fr[e].i * S * R, p->a + fr[e].i * S * R, S * R * sizeof(double));
    } while (next_pick(pick, fr, nf));
done:
    free(q.a);
    free(st);
    return rc;
}

/* Steps 1 to 5 on p; step 5 (branch) when depth > 0 and the rounded plan is more than BRANCH_GAP
 * over the LP's value. */
static int solve(const struct sophon__problem *p, uint8_t *stage, struct sophon_plan *plan,
                 int depth)
{
    struct colgen *cg = malloc(sizeof(*cg));
    uint8_t *asg = malloc(R * (p->n ? p->n : 1));
    struct frac *fr = NULL;
    size_t nf = 0;
    double g[R], load[R];
    int rc = -ENOMEM;

    if (!cg || !asg)
        goto done;
    if (solve_lp(p, cg) == 1) {
        price(p, start_columns[0], stage, g);
        plan->iterations = 0;
    } else {
        plan->iterations = cg->rounds;
        plan->lower_bound_s = fmax(p->gpu_s, cg->best_lb * cg->scale);
        plan->lp_s = fmax(p->gpu_s, cg->tmaster * cg->scale);
        rc = basic_mixture(p, cg, asg, stage, &fr, &nf);
        if (rc < 0)
            goto done;
        if (rc == 1) {
            price(p, start_columns[0], stage, g);
            nf = 0;
        } else {
            nf = purify(p, fr, nf, stage);
            round_fractional(p, fr, nf, stage, plan);
        }
    }
    /* Step 4. */
    sophon__loads(p, stage, load);
    local_search(p, stage, load);
    rc = 0;
    if (depth > 0 && nf > 0 && nf <= 3 &&
        sophon__objective(p, load) > plan->lp_s * (1 + BRANCH_GAP))
        rc = branch(p, fr, nf, stage, load, depth - 1);
done:
    free(fr);
    free(asg);
    free(cg);
    return rc;
}

int sophon__selective(const struct sophon__problem *p, uint8_t *stage, struct sophon_plan *plan)
{
    return solve(p, stage, plan, p->n > BRANCH_WIDE_N ? 1 : BRANCH_DEPTH);
}
