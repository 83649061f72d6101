/*
 * _sophon.c - the CPython extension behind the `sophon` package (python/sophon/__init__.py).
 *
 * It exposes the pipeline (prep, probe), the sampler's draw (draw_crop) and libsophon's loader to
 * Python. Images come in through the buffer protocol and samples go out as bytearrays (prep) or
 * as buffers over the loader's own batch memory (Loader.next), so numpy.frombuffer and
 * torch.from_numpy see them without a copy. The GIL is released while the pipeline runs and while
 * the loader connects, starts an epoch or waits for a batch.
 *
 * Errors: a negative errno of the C code becomes sophon.Error (an OSError subclass) carrying the
 * errno and the C message; arguments that are wrong whatever the image is raise ValueError or
 * TypeError before any C call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "prep.h"
#include "sampler.h"
#include "sophon.h"

static PyObject *sophon_error; /* sophon.Error, a subclass of OSError */

/* Keyword names: Python 3.11 takes them as char *, the literals are const under -Wwrite-strings. */
#define KW(name) ((char *)(name))

/* Raises sophon.Error(errno, "what: message (strerror)") for the negative errno r. */
static PyObject *raise_errno(int r, const char *what, const char *msg)
{
    char text[512];
    if (msg != NULL && msg[0] != '\0')
        snprintf(text, sizeof(text), "%s: %s (%s)", what, msg, strerror(-r));
    else
        snprintf(text, sizeof(text), "%s: %s", what, strerror(-r));
    PyObject *args = Py_BuildValue("(is)", -r, text);
    if (args != NULL) {
        PyErr_SetObject(sophon_error, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* Reads a sequence of n floats (mean, std, scale, ratio) into out; None keeps out. -1 with an
 * exception set. */
static int parse_floats(PyObject *seq, const char *name, double *out, Py_ssize_t n)
{
    if (seq == NULL || seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, "");
    if (fast == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of %zd numbers", name, n);
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s must have %zd numbers", name, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        if (!isfinite(v)) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s must be finite", name);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    return 0;
}

/* mean and std into the float arrays a request or the loader's options hold. */
static int parse_normalize(PyObject *mean_o, PyObject *std_o, float mean[3], float std[3])
{
    double m[3] = {mean[0], mean[1], mean[2]}, s[3] = {std[0], std[1], std[2]};
    if (parse_floats(mean_o, "mean", m, 3) < 0 || parse_floats(std_o, "std", s, 3) < 0)
        return -1;
    for (int c = 0; c < 3; c++) {
        if (s[c] == 0.0) {
            PyErr_SetString(PyExc_ValueError, "std must not be 0");
            return -1;
        }
        mean[c] = (float)m[c];
        std[c] = (float)s[c];
    }
    return 0;
}

/* scale and ratio as RandomResizedCrop takes them: two positive numbers, lower first. */
static int parse_range(PyObject *o, const char *name, double out[2])
{
    if (parse_floats(o, name, out, 2) < 0)
        return -1;
    if (!(out[0] > 0.0 && out[0] <= out[1])) {
        PyErr_Format(PyExc_ValueError, "%s must be (lo, hi) with 0 < lo <= hi", name);
        return -1;
    }
    return 0;
}

static int parse_format(const char *name)
{
    int f = sophon_format_from_name(name);
    if (f < 0)
        PyErr_Format(PyExc_ValueError, "format must be \"u8\" or \"f32\", not \"%s\"", name);
    return f;
}

static int parse_transform(const char *name)
{
    if (strcmp(name, "train") == 0)
        return SOPHON_TRANSFORM_TRAIN;
    if (strcmp(name, "val") == 0)
        return SOPHON_TRANSFORM_VAL;
    PyErr_Format(PyExc_ValueError, "transform must be \"train\" or \"val\", not \"%s\"", name);
    return -1;
}

static int check_side(long v, const char *name, unsigned long max)
{
    if (v < 1 || (unsigned long)v > max) {
        PyErr_Format(PyExc_ValueError, "%s must be 1..%lu, not %ld", name, max, v);
        return -1;
    }
    return 0;
}

/* ---- prep, probe, draw_crop ------------------------------------------------------------------ */

/* Width and height of jpeg from its header; -1 with sophon.Error set. */
static int probe_size(const Py_buffer *jpeg, uint32_t *w, uint32_t *h)
{
    struct sophon_probe_info info;
    char err[256] = "";
    int r;

    Py_BEGIN_ALLOW_THREADS;
    r = sophon_probe(&info, jpeg->buf, (size_t)jpeg->len, err, sizeof(err));
    Py_END_ALLOW_THREADS;
    if (r < 0) {
        raise_errno(r, "probe", err);
        return -1;
    }
    *w = info.width;
    *h = info.height;
    return 0;
}

PyDoc_STRVAR(prep_doc, "prep(jpeg, box=None, size=224, flip=False, format='u8', transform=None,\n"
                       "     resize=256, mean=None, std=None, seed=None, epoch=0, index=0,\n"
                       "     scale=None, ratio=None, fast=False) -> bytearray\n\n"
                       "The sample of one JPEG; sophon/__init__.py documents the arguments.");

static PyObject *py_prep(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {KW("jpeg"),   KW("box"),       KW("size"),   KW("flip"),
                             KW("format"), KW("transform"), KW("resize"), KW("mean"),
                             KW("std"),    KW("seed"),      KW("epoch"),  KW("index"),
                             KW("scale"),  KW("ratio"),     KW("fast"),   NULL};
    Py_buffer jpeg = {0};
    PyObject *box = Py_None, *mean = Py_None, *std = Py_None, *seed = Py_None;
    PyObject *scale = Py_None, *ratio = Py_None, *out = NULL;
    long size = SOPHON_LOADER_SIDE, resize = 256;
    unsigned long long epoch = 0, index = 0;
    int flip = 0, fast = 0;
    const char *format = "u8", *transform = NULL;
    (void)self;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|O$lpszlOOOKKOOp", kwlist, &jpeg, &box, &size,
                                     &flip, &format, &transform, &resize, &mean, &std, &seed,
                                     &epoch, &index, &scale, &ratio, &fast))
        return NULL;

    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    struct sophon_crop_policy policy = SOPHON_CROP_POLICY_INIT;
    double sc[2] = {policy.scale_min, policy.scale_max},
           ra[2] = {policy.ratio_min, policy.ratio_max};
    int fmt = parse_format(format);
    int tr = transform == NULL ? -1 : parse_transform(transform);
    if (fmt < 0 || (transform != NULL && tr < 0) || check_side(size, "size", SOPHON_MAX_SIDE) < 0 ||
        parse_normalize(mean, std, p.mean, p.std) < 0 || parse_range(scale, "scale", sc) < 0 ||
        parse_range(ratio, "ratio", ra) < 0)
        goto done;
    p.out_w = p.out_h = (uint32_t)size;
    p.format = (uint8_t)fmt;
    p.fast = (uint8_t)fast;
    policy.scale_min = sc[0], policy.scale_max = sc[1];
    policy.ratio_min = ra[0], policy.ratio_max = ra[1];

    int have_box = box != Py_None, have_seed = seed != Py_None;
    if (tr == SOPHON_TRANSFORM_VAL) {
        if (have_box || have_seed || flip) {
            PyErr_SetString(PyExc_ValueError, "transform='val' takes the whole image and does "
                                              "not flip: no box, seed or flip");
            goto done;
        }
        if (check_side(resize, "resize", SOPHON_MAX_RESIZE_SIDE) < 0)
            goto done;
        if (resize < size) {
            PyErr_SetString(PyExc_ValueError, "transform='val' needs resize >= size (torchvision "
                                              "pads there; sophon does not)");
            goto done;
        }
    } else if (have_box == have_seed) {
        PyErr_SetString(PyExc_ValueError,
                        "give either box=(x, y, w, h) or seed= (or transform='val')");
        goto done;
    } else if (have_box) {
        unsigned long long b[4];
        if (!PyTuple_Check(box) && !PyList_Check(box)) {
            PyErr_SetString(PyExc_TypeError, "box must be a tuple (x, y, w, h) of ints");
            goto done;
        }
        if (PySequence_Size(box) != 4) {
            PyErr_SetString(PyExc_ValueError, "box must have 4 ints: (x, y, w, h)");
            goto done;
        }
        for (Py_ssize_t i = 0; i < 4; i++) {
            PyObject *v = PySequence_GetItem(box, i);
            if (v == NULL)
                goto done;
            if (!PyLong_Check(v)) {
                Py_DECREF(v);
                PyErr_SetString(PyExc_TypeError, "box must be a tuple (x, y, w, h) of ints");
                goto done;
            }
            b[i] = PyLong_AsUnsignedLongLong(v);
            Py_DECREF(v);
            if (PyErr_Occurred() || b[i] > UINT32_MAX) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "box values must be 0..2**32-1");
                goto done;
            }
        }
        if (b[2] == 0 || b[3] == 0) {
            PyErr_SetString(PyExc_ValueError, "box width and height must be > 0");
            goto done;
        }
        p.box_x = (uint32_t)b[0], p.box_y = (uint32_t)b[1];
        p.box_w = (uint32_t)b[2], p.box_h = (uint32_t)b[3];
        p.flip = (uint8_t)flip;
    } else if (flip) {
        PyErr_SetString(PyExc_ValueError, "seed= draws the flip: no flip=");
        goto done;
    }

    if (tr == SOPHON_TRANSFORM_VAL || have_seed) {
        uint32_t w, h;
        if (probe_size(&jpeg, &w, &h) < 0)
            goto done;
        if (have_seed) {
            unsigned long long s = PyLong_AsUnsignedLongLong(seed);
            if (PyErr_Occurred())
                goto done;
            int r = sophon_draw_crop(&p, s, epoch, index, w, h, &policy);
            if (r < 0) {
                raise_errno(r, "draw_crop", "an empty image");
                goto done;
            }
        } else {
            int r = sophon_prep_set_val(&p, w, h, (uint32_t)resize, (uint32_t)size);
            if (r < 0) {
                raise_errno(r, "prep", "the resized image is smaller than size");
                goto done;
            }
        }
    }

    uint64_t n = sophon_prep_output_size(&p);
    if (n == 0 || n > PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad output size");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL)
        goto done;
    char err[256] = "";
    int r;
    uint8_t *dst = (uint8_t *)PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS;
    r = sophon_prep_run(dst, (size_t)n, jpeg.buf, (size_t)jpeg.len, &p, NULL, err, sizeof(err));
    Py_END_ALLOW_THREADS;
    if (r < 0) {
        Py_CLEAR(out);
        raise_errno(r, "prep", err);
    }
done:
    PyBuffer_Release(&jpeg);
    return out;
}

PyDoc_STRVAR(probe_doc, "probe(jpeg) -> (width, height), from the header alone.");

static PyObject *py_probe(PyObject *self, PyObject *arg)
{
    Py_buffer jpeg;
    uint32_t w, h;
    (void)self;

    if (PyObject_GetBuffer(arg, &jpeg, PyBUF_SIMPLE) < 0)
        return NULL;
    int r = probe_size(&jpeg, &w, &h);
    PyBuffer_Release(&jpeg);
    return r < 0 ? NULL : Py_BuildValue("(II)", w, h);
}

PyDoc_STRVAR(draw_crop_doc, "draw_crop(width, height, seed, epoch, index, scale=None, ratio=None)\n"
                            "    -> ((x, y, w, h), flip)\n\n"
                            "The box and flip the loader draws for sample `index` of `epoch`.");

static PyObject *py_draw_crop(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {KW("width"), KW("height"), KW("seed"),  KW("epoch"),
                             KW("index"), KW("scale"),  KW("ratio"), NULL};
    unsigned long long seed, epoch, index;
    long width, height;
    PyObject *scale = Py_None, *ratio = Py_None;
    (void)self;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "llKKK|$OO", kwlist, &width, &height, &seed, &epoch,
                                     &index, &scale, &ratio))
        return NULL;
    struct sophon_crop_policy policy = SOPHON_CROP_POLICY_INIT;
    double sc[2] = {policy.scale_min, policy.scale_max},
           ra[2] = {policy.ratio_min, policy.ratio_max};
    if (check_side(width, "width", UINT32_MAX) < 0 ||
        check_side(height, "height", UINT32_MAX) < 0 || parse_range(scale, "scale", sc) < 0 ||
        parse_range(ratio, "ratio", ra) < 0)
        return NULL;
    policy.scale_min = sc[0], policy.scale_max = sc[1];
    policy.ratio_min = ra[0], policy.ratio_max = ra[1];
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    int r = sophon_draw_crop(&p, seed, epoch, index, (uint32_t)width, (uint32_t)height, &policy);
    if (r < 0)
        return raise_errno(r, "draw_crop", NULL);
    return Py_BuildValue("((IIII)O)", p.box_x, p.box_y, p.box_w, p.box_h,
                         p.flip ? Py_True : Py_False);
}

/* ---- the loader ------------------------------------------------------------------------------
 *
 * A Loader owns a sophon_loader. Its batches live in the loader's ring of batch buffers, which
 * are allocated at open and freed at close: a BatchView exports one batch's bytes and holds a
 * reference to its Loader, and the Loader counts the views exported. close() with views still
 * alive only marks the loader closed; the sophon_loader is freed when the last view goes. So a
 * view kept past the next batch may show later samples (the ring reuses the buffer), but it never
 * reads freed memory.
 *
 * One thread at a time: every call that reaches the C loader sets `busy` (under the GIL) and a
 * second thread finds it set and gets RuntimeError instead of entering the C loader with it.
 */

typedef struct {
    PyObject_HEAD;
    sophon_loader *l;
    int busy;         /* a thread is inside the C loader */
    int closed;       /* close() was called: no more batches */
    Py_ssize_t views; /* buffers exported by BatchViews and not yet released */
    /* With trace=True: the loader's trace of the last batch (stash_trace), batch_size places. */
    struct sophon_sample_trace *traced;
    size_t ntraced, trace_cap;
} LoaderObject;

typedef struct {
    PyObject_HEAD;
    LoaderObject *loader; /* strong reference: keeps the batch memory alive */
    uint8_t *data;
    Py_ssize_t len;
} BatchViewObject;

static PyTypeObject LoaderType;
static PyTypeObject BatchViewType;

/* The options' trace: called by sophon_loader_next in the thread that called it, without the
 * GIL; kept for trace_records(). Names stay valid until the loader is closed. */
static void stash_trace(void *arg, const struct sophon_sample_trace *t)
{
    LoaderObject *self = arg;
    if (self->ntraced < self->trace_cap)
        self->traced[self->ntraced++] = *t;
}

/* The names of enum sophon_loader_stage (the CROP stage after the by-stage arrays' COUNT). */
static const char *const stage_names[] = {"stored", "u8", "f32", "crop"};
_Static_assert(SOPHON_LOADER_STAGE_STORED == 0 && SOPHON_LOADER_STAGE_U8 == 1 &&
                   SOPHON_LOADER_STAGE_F32 == 2 && SOPHON_LOADER_STAGE_COUNT == 3 &&
                   SOPHON_LOADER_STAGE_CROP == 3,
               "stage_names[] follows enum sophon_loader_stage");

static const char *stage_name(int stage)
{
    return stage >= 0 && stage < (int)(sizeof(stage_names) / sizeof(*stage_names))
               ? stage_names[stage]
               : "unknown";
}

static void loader_free_c(LoaderObject *self)
{
    sophon_loader *l = self->l;
    self->l = NULL;
    /* Waits for operations in flight and joins the loader's threads: without the GIL, since they
     * never need it but other Python threads may. */
    if (l != NULL) {
        Py_BEGIN_ALLOW_THREADS;
        sophon_loader_close(l);
        Py_END_ALLOW_THREADS;
    }
    PyMem_Free(self->traced); /* also after an open that failed */
    self->traced = NULL;
    self->ntraced = self->trace_cap = 0;
}

/* Takes the loader for one call: -1 with an exception set when it is closed or in use. */
static int loader_enter(LoaderObject *self)
{
    if (self->closed || self->l == NULL) {
        PyErr_SetString(PyExc_ValueError, "the loader is closed");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the loader is in use by another thread (one thread at a time)");
        return -1;
    }
    self->busy = 1;
    return 0;
}

static int bv_getbuffer(PyObject *obj, Py_buffer *view, int flags)
{
    BatchViewObject *self = (BatchViewObject *)obj;
    if (PyBuffer_FillInfo(view, obj, self->data, self->len, 0, flags) < 0)
        return -1;
    self->loader->views++;
    return 0;
}

static void bv_releasebuffer(PyObject *obj, Py_buffer *view)
{
    BatchViewObject *self = (BatchViewObject *)obj;
    (void)view;
    LoaderObject *lo = self->loader;
    if (--lo->views == 0 && lo->closed && !lo->busy)
        loader_free_c(lo);
}

static void bv_dealloc(PyObject *obj)
{
    BatchViewObject *self = (BatchViewObject *)obj;
    Py_XDECREF(self->loader);
    Py_TYPE(obj)->tp_free(obj);
}

static PyBufferProcs bv_as_buffer = {bv_getbuffer, bv_releasebuffer};

static PyTypeObject BatchViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sophon._sophon.BatchView",
    .tp_basicsize = sizeof(BatchViewObject),
    .tp_dealloc = bv_dealloc,
    .tp_as_buffer = &bv_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The bytes of one batch in the loader's memory, valid until the next batch.",
};

/* A view of n bytes at data, kept alive with the loader. */
static PyObject *batch_view(LoaderObject *lo, uint8_t *data, size_t n)
{
    BatchViewObject *v = PyObject_New(BatchViewObject, &BatchViewType);
    if (v == NULL)
        return NULL;
    Py_INCREF(lo);
    v->loader = lo;
    v->data = data;
    v->len = (Py_ssize_t)n;
    return (PyObject *)v;
}

static int loader_init(PyObject *obj, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {KW("pool"),     KW("dataset"),   KW("conf"),       KW("client_id"),
                             KW("policy"),   KW("format"),    KW("batch_size"), KW("transform"),
                             KW("size"),     KW("resize"),    KW("scale"),      KW("ratio"),
                             KW("mean"),     KW("std"),       KW("threads"),    KW("window"),
                             KW("rank"),     KW("world"),     KW("keyring"),    KW("stages"),
                             KW("prefetch"), KW("namespace"), KW("trace"),      NULL};
    LoaderObject *self = (LoaderObject *)obj;
    const char *pool, *dataset, *conf = NULL, *id = NULL, *policy = NULL, *keyring = NULL;
    const char *stages = NULL, *nspace = NULL;
    const char *format = "f32", *transform = "train";
    long batch = 32, size = SOPHON_LOADER_SIDE, resize = 256, threads = 0, window = 0;
    long rank = 0, world = 1, prefetch = 0;
    int trace = 0;
    PyObject *scale = Py_None, *ratio = Py_None, *mean = Py_None, *std = Py_None;

    if (self->l != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the loader is already open");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|$zzzslsllOOOOllllzzlzp", kwlist, &pool, &dataset,
                                     &conf, &id, &policy, &format, &batch, &transform, &size,
                                     &resize, &scale, &ratio, &mean, &std, &threads, &window, &rank,
                                     &world, &keyring, &stages, &prefetch, &nspace, &trace))
        return -1;
    struct sophon_loader_options o = SOPHON_LOADER_OPTIONS_INIT;
    int fmt = parse_format(format), tr = parse_transform(transform);
    if (fmt < 0 || tr < 0 || check_side(batch, "batch_size", 65536) < 0 ||
        check_side(size, "size", SOPHON_MAX_SIDE) < 0 ||
        check_side(world, "world", UINT32_MAX) < 0 || parse_range(scale, "scale", o.scale) < 0 ||
        parse_range(ratio, "ratio", o.ratio) < 0 || parse_normalize(mean, std, o.mean, o.std) < 0)
        return -1;
    if (window < 0 || window > 4096) {
        PyErr_Format(PyExc_ValueError,
                     "window must be 0 (the loader chooses per epoch) .. 4096 operations, not %ld",
                     window);
        return -1;
    }
    if (prefetch < 0 || prefetch > 65536) {
        PyErr_SetString(PyExc_ValueError,
                        "prefetch must be 0 (1 + window / batch_size) .. 65536 batches");
        return -1;
    }
    if (threads < 0 || threads > 256) {
        PyErr_SetString(PyExc_ValueError, "threads must be 0 (the online CPUs) .. 256");
        return -1;
    }
    if (rank < 0 || rank >= world) {
        PyErr_Format(PyExc_ValueError, "rank must be 0..world-1, not %ld of %ld", rank, world);
        return -1;
    }
    if (tr == SOPHON_TRANSFORM_VAL &&
        (check_side(resize, "resize", SOPHON_MAX_RESIZE_SIDE) < 0 || resize < size)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "transform='val' needs resize >= size");
        return -1;
    }
    o.policy = policy;
    o.format = fmt;
    o.batch_size = (unsigned)batch;
    o.transform = tr;
    o.size = (unsigned)size;
    o.resize = (unsigned)resize;
    o.threads = (unsigned)threads;
    o.window = (unsigned)window;
    o.rank = (unsigned)rank;
    o.world = (unsigned)world;
    o.keyring = keyring;
    o.stages = stages;
    o.prefetch = (unsigned)prefetch;
    o.nspace = nspace;
    if (trace) {
        PyMem_Free(self->traced); /* an earlier open's that failed */
        self->trace_cap = 0;
        self->traced = PyMem_Calloc((size_t)batch, sizeof(*self->traced));
        if (self->traced == NULL)
            return PyErr_NoMemory(), -1;
        self->trace_cap = (size_t)batch;
        o.trace = stash_trace;
        o.trace_arg = self;
    }

    sophon_loader *l = NULL;
    int r;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    r = sophon_loader_open(&l, conf, id, pool, dataset, &o);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    if (r == -EINVAL) {
        PyErr_Format(PyExc_ValueError,
                     "sophon_loader_open refused the options (unknown policy \"%s\"?)",
                     policy ? policy : "selective");
        return -1;
    }
    if (r < 0) {
        char what[400];
        if (r == -EXDEV)
            snprintf(what, sizeof(what),
                     "cannot open dataset %s in pool %s: its objects are not in namespace '%s' "
                     "(the message above says where; leave namespace out to read them there)",
                     dataset, pool, nspace ? nspace : "");
        else
            snprintf(what, sizeof(what), "cannot open dataset %s in pool %s", dataset, pool);
        raise_errno(r, what, NULL);
        return -1;
    }
    self->l = l;
    self->closed = 0;
    return 0;
}

static PyObject *loader_epoch_start(PyObject *obj, PyObject *args)
{
    LoaderObject *self = (LoaderObject *)obj;
    unsigned long long seed, epoch;
    int r;

    if (!PyArg_ParseTuple(args, "KK", &seed, &epoch) || loader_enter(self) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS;
    r = sophon_loader_epoch_start(self->l, seed, epoch);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    if (r < 0)
        return raise_errno(r, "cannot start the epoch", NULL);
    Py_RETURN_NONE;
}

/* next() -> None at the end of the epoch, or (data, labels, indices, errors, names, first):
 * data a BatchView over the batch's samples, labels/indices/errors bytes of int32, uint64 and
 * int arrays, names a list of str. */
static PyObject *loader_next(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    const struct sophon_batch *b = NULL;
    int r;
    (void)unused;

    if (loader_enter(self) < 0)
        return NULL;
    self->ntraced = 0;
    Py_BEGIN_ALLOW_THREADS;
    r = sophon_loader_next(&b, self->l);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    if (r < 0)
        return raise_errno(r, "cannot get the next batch",
                           r == -EINVAL ? "no epoch started" : NULL);
    if (r == 0)
        Py_RETURN_NONE;

    PyObject *names = PyList_New((Py_ssize_t)b->n);
    if (names == NULL)
        return NULL;
    for (size_t k = 0; k < b->n; k++) {
        PyObject *s = PyUnicode_DecodeFSDefault(b->names[k]);
        if (s == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyList_SET_ITEM(names, (Py_ssize_t)k, s);
    }
    PyObject *view = batch_view(self, b->data, b->n * b->sample_bytes);
    if (view == NULL) {
        Py_DECREF(names);
        return NULL;
    }
    return Py_BuildValue("(Ny#y#y#Nn)", view, (const char *)b->labels,
                         (Py_ssize_t)(b->n * sizeof(*b->labels)), (const char *)b->indices,
                         (Py_ssize_t)(b->n * sizeof(*b->indices)), (const char *)b->errors,
                         (Py_ssize_t)(b->n * sizeof(*b->errors)), names, (Py_ssize_t)b->first);
}

static int dict_set(PyObject *d, const char *key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int r = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return r;
}

static PyObject *loader_stats(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    struct sophon_loader_stats st = SOPHON_LOADER_STATS_INIT;
    (void)unused;

    /* The C call is quick and thread-safe: it runs with the GIL held, so close() (which marks
     * the loader closed before it lets go of the GIL) cannot free it meanwhile. */
    if (self->closed || self->l == NULL) {
        PyErr_SetString(PyExc_ValueError, "the loader is closed");
        return NULL;
    }
    int r = sophon_loader_stats_get(&st, self->l);
    if (r < 0)
        return raise_errno(r, "stats", NULL);
    PyObject *d = PyDict_New(), *bytes = PyDict_New(), *samples = PyDict_New();
    if (d == NULL || bytes == NULL || samples == NULL)
        goto fail;
    for (int s = 0; s < SOPHON_LOADER_STAGE_COUNT; s++) {
        const char *name = stage_name(s);
        if (dict_set(bytes, name, PyLong_FromUnsignedLongLong(st.bytes_by_stage[s])) < 0 ||
            dict_set(samples, name, PyLong_FromUnsignedLongLong(st.samples_by_stage[s])) < 0)
            goto fail;
    }
    if (dict_set(bytes, "crop", PyLong_FromUnsignedLongLong(st.crop_bytes)) < 0 ||
        dict_set(samples, "crop", PyLong_FromUnsignedLongLong(st.crop_samples)) < 0)
        goto fail;
    uint64_t total = st.samples + st.failed;
    double secs = st.elapsed_s > 0 ? st.elapsed_s : 1e-9;
    if (dict_set(d, "epoch", PyLong_FromUnsignedLongLong(st.epoch)) < 0 ||
        dict_set(d, "samples", PyLong_FromUnsignedLongLong(st.samples)) < 0 ||
        dict_set(d, "delivered", PyLong_FromUnsignedLongLong(st.delivered)) < 0 ||
        dict_set(d, "failed", PyLong_FromUnsignedLongLong(st.failed)) < 0 ||
        dict_set(d, "samples_per_s", PyFloat_FromDouble((double)total / secs)) < 0 ||
        dict_set(d, "bytes_received", PyLong_FromUnsignedLongLong(st.bytes_received)) < 0 ||
        PyDict_SetItemString(d, "bytes_by_stage", bytes) < 0 ||
        PyDict_SetItemString(d, "samples_by_stage", samples) < 0 ||
        dict_set(d, "offloaded", PyLong_FromUnsignedLongLong(st.offloaded)) < 0 ||
        dict_set(d, "planned_offloaded", PyLong_FromSize_t(st.planned_offloaded)) < 0 ||
        dict_set(d, "retries", PyLong_FromUnsignedLongLong(st.retries)) < 0 ||
        dict_set(d, "fallbacks", PyLong_FromUnsignedLongLong(st.fallbacks)) < 0 ||
        dict_set(d, "demoted", PyLong_FromUnsignedLongLong(st.demoted)) < 0 ||
        dict_set(d, "ahead", PyLong_FromUnsignedLongLong(st.ahead)) < 0 ||
        dict_set(d, "prefetch", PyLong_FromUnsignedLong(st.prefetch)) < 0 ||
        dict_set(d, "window", PyLong_FromUnsignedLong(st.window)) < 0 ||
        dict_set(d, "elapsed_s", PyFloat_FromDouble(st.elapsed_s)) < 0 ||
        dict_set(d, "client_cpu_s", PyFloat_FromDouble((double)st.client_cpu_ns / 1e9)) < 0 ||
        dict_set(d, "osd_cpu_s", PyFloat_FromDouble((double)st.osd_cpu_ns / 1e9)) < 0 ||
        dict_set(d, "osd_process_s", PyFloat_FromDouble((double)st.osd_process_ns / 1e9)) < 0 ||
        dict_set(d, "osd_op_s", PyFloat_FromDouble(st.osd_op_s)) < 0 ||
        dict_set(d, "client_byte_s", PyFloat_FromDouble(st.client_byte_s)) < 0 ||
        dict_set(d, "msgr_cpu_s", PyFloat_FromDouble((double)st.client_msgr_ns / 1e9)) < 0 ||
        dict_set(d, "predicted_bytes", PyLong_FromUnsignedLongLong(st.predicted_bytes)) < 0 ||
        dict_set(d, "predicted_epoch_s", PyFloat_FromDouble(st.predicted_epoch_s)) < 0 ||
        dict_set(d, "storage_speed", PyFloat_FromDouble(st.storage_speed)) < 0 ||
        dict_set(d, "client_speed", PyFloat_FromDouble(st.client_speed)) < 0 ||
        dict_set(d, "crop_speed", PyFloat_FromDouble(st.crop_speed)) < 0 ||
        dict_set(d, "crop_work", PyFloat_FromDouble(st.crop_work)) < 0 ||
        dict_set(d, "class_available", PyBool_FromLong(st.class_available)) < 0)
        goto fail;
    Py_DECREF(bytes);
    Py_DECREF(samples);
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(bytes);
    Py_XDECREF(samples);
    return NULL;
}

/* trace_records() -> a dict per sample of the last batch next() returned (trace=True), with
 * `sophon load --trace`'s columns; [] without trace. */
static PyObject *loader_trace_records(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    (void)unused;
    PyObject *list = PyList_New(0);
    for (size_t k = 0; list != NULL && k < self->ntraced; k++) {
        const struct sophon_sample_trace *t = &self->traced[k];
        const char *planned = stage_name(t->planned), *stage = stage_name(t->stage);
        PyObject *d = Py_BuildValue(
            "{sKsKsKsNsssssNsNsIsisdsdsdsdsKsKsdsdsdsd}", "epoch", (unsigned long long)t->epoch,
            "position", (unsigned long long)t->position, "index", (unsigned long long)t->index,
            "object", PyUnicode_DecodeFSDefault(t->name), "planned", planned, "stage", stage,
            "demoted", PyBool_FromLong(t->demoted), "ahead", PyBool_FromLong(t->ahead), "retries",
            t->retries, "error", t->error, "issued_s", t->issued_s, "completed_s", t->completed_s,
            "ready_s", t->ready_s, "delivered_s", t->delivered_s, "bytes",
            (unsigned long long)t->bytes, "planned_bytes", (unsigned long long)t->planned_bytes,
            "planned_osd_s", t->planned_osd_s, "osd_cpu_s", (double)t->osd_cpu_ns / 1e9,
            "planned_client_s", t->planned_client_s, "client_cpu_s",
            (double)t->client_cpu_ns / 1e9);
        if (d == NULL || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    return list;
}

static PyObject *loader_classes(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    (void)unused;
    if (self->closed || self->l == NULL) {
        PyErr_SetString(PyExc_ValueError, "the loader is closed");
        return NULL;
    }
    size_t n = sophon_loader_classes(self->l);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t k = 0; list != NULL && k < n; k++) {
        PyObject *s = PyUnicode_DecodeFSDefault(sophon_loader_class_name(self->l, k));
        if (s == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, s);
    }
    return list;
}

static PyObject *loader_dataset_size(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    (void)unused;
    if (self->closed || self->l == NULL) {
        PyErr_SetString(PyExc_ValueError, "the loader is closed");
        return NULL;
    }
    return PyLong_FromSize_t(sophon_loader_dataset_size(self->l));
}

static PyObject *loader_close(PyObject *obj, PyObject *unused)
{
    LoaderObject *self = (LoaderObject *)obj;
    (void)unused;
    if (self->closed || self->l == NULL) {
        self->closed = 1;
        Py_RETURN_NONE;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the loader is in use by another thread");
        return NULL;
    }
    self->closed = 1;
    /* With views of a batch still alive the memory stays until the last is released. */
    if (self->views == 0) {
        self->busy = 1;
        loader_free_c(self);
        self->busy = 0;
    }
    Py_RETURN_NONE;
}

static void loader_dealloc(PyObject *obj)
{
    LoaderObject *self = (LoaderObject *)obj;
    /* No view is alive (each holds a reference), and no method runs (it would hold one too). */
    loader_free_c(self);
    Py_TYPE(obj)->tp_free(obj);
}

static PyMethodDef loader_methods[] = {
    {"epoch_start", loader_epoch_start, METH_VARARGS,
     "epoch_start(seed, epoch): starts an epoch of this shard."},
    {"next", loader_next, METH_NOARGS,
     "next() -> None, or (data, labels, indices, errors, names, first) of the next batch."},
    {"stats", loader_stats, METH_NOARGS, "stats() -> dict of the current epoch's statistics."},
    {"trace_records", loader_trace_records, METH_NOARGS,
     "trace_records() -> list of dicts, one per sample of the last batch (trace=True)."},
    {"classes", loader_classes, METH_NOARGS, "classes() -> list of the dataset's class names."},
    {"dataset_size", loader_dataset_size, METH_NOARGS,
     "dataset_size() -> samples of the dataset (all shards)."},
    {"close", loader_close, METH_NOARGS, "close(): frees the loader (idempotent)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sophon._sophon.Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = loader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C loader; sophon.Loader wraps it.",
    .tp_methods = loader_methods,
    .tp_init = loader_init,
    .tp_new = PyType_GenericNew,
};

/* ---- the module ------------------------------------------------------------------------------ */

/* PyCFunctionWithKeywords through void (*)(void): the cast CPython's own modules make, without
 * -Wcast-function-type's complaint. */
#define KW_FUNC(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef module_methods[] = {
    {"prep", KW_FUNC(py_prep), METH_VARARGS | METH_KEYWORDS, prep_doc},
    {"probe", py_probe, METH_O, probe_doc},
    {"draw_crop", KW_FUNC(py_draw_crop), METH_VARARGS | METH_KEYWORDS, draw_crop_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sophon._sophon",
    .m_doc = "The C half of the sophon package.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__sophon(void);

PyMODINIT_FUNC PyInit__sophon(void)
{
    if (PyType_Ready(&LoaderType) < 0 || PyType_Ready(&BatchViewType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    sophon_error = PyErr_NewExceptionWithDoc(
        "sophon.Error",
        "A failure of sophon's C code: errno is the error number (errno.EBADMSG for a corrupt "
        "JPEG, ...), strerror the C message.",
        PyExc_OSError, NULL);
    if (sophon_error == NULL || PyModule_AddObjectRef(m, "Error", sophon_error) < 0 ||
        PyModule_AddObjectRef(m, "Loader", (PyObject *)&LoaderType) < 0 ||
        PyModule_AddStringConstant(m, "version", sophon_version_string()) < 0 ||
        PyModule_AddIntConstant(m, "wire_version", sophon_wire_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
