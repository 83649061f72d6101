"""sophon: training samples prepared as torchvision prepares them, locally or in Ceph's OSDs.

    import sophon
    a = sophon.prep(jpeg, box=(x, y, w, h), size=224, flip=False, format="u8")  # (224, 224, 3) u8
    a = sophon.prep(jpeg, transform="val", size=224, resize=256, format="f32")  # (3, 224, 224) f32
    box, flip = sophon.draw_crop(width, height, seed, epoch, index)            # the loader's draw
    with sophon.Loader(pool="sophon", dataset="photos", batch_size=32) as loader:
        for images, labels in loader.epoch(seed=0, epoch=0):
            ...                        # numpy views of the loader's memory, valid until the next

`u8` samples are HWC RGB bytes, byte-identical to torchvision's RandomResizedCrop (or Resize +
CenterCrop) on its PIL loader; `f32` samples are CHW floats, ToTensor + Normalize(mean, std) of
them (ImageNet's mean and std unless given).

Errors of the C code raise sophon.Error, an OSError whose errno says what went wrong
(errno.EBADMSG: corrupt or not a JPEG; EMEDIUMTYPE: a JPEG kind Pillow refuses too; E2BIG and
EFBIG: over a limit; EINVAL: a box outside the image; ...) and whose message is the C one.
Arguments that are wrong whatever the image raise ValueError or TypeError.
"""

import collections
import operator

import numpy as np

from . import _sophon

__all__ = ["Error", "Batch", "Loader", "prep", "probe", "draw_crop", "version"]

Error = _sophon.Error
Error.__module__ = "sophon"
version = _sophon.version

_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


def _shape(fmt, size):
    return (size, size, 3) if fmt == "u8" else (3, size, size)


def _dtype(fmt):
    return np.uint8 if fmt == "u8" else np.float32


def prep(jpeg, box=None, size=224, flip=False, format="u8", *, transform=None, resize=256,
         mean=None, std=None, seed=None, epoch=0, index=0, scale=None, ratio=None, fast=False):
    """The training sample of one JPEG (any bytes-like object) as a new numpy array.

    Exactly one geometry:
      box=(x, y, w, h)     RandomResizedCrop with that box drawn: the box resized to size x size,
                           mirrored when flip is true;
      seed=S               the box and flip the loader draws for sample `index` of `epoch`
                           (scale= and ratio= as RandomResizedCrop's);
      transform="val"      Resize(resize) + CenterCrop(size).
    format "u8" gives a (size, size, 3) uint8 array, "f32" a (3, size, size) float32 array
    normalized with mean and std (ImageNet's by default). fast=True trades exactness for speed
    (DCT-domain downscaling; not torchvision's bytes).

    The GIL is released while the pipeline runs: threads prepare samples in parallel.
    """
    if transform is not None and transform not in ("train", "val"):
        raise ValueError(f'transform must be "train" or "val", not {transform!r}')
    if transform == "train":
        transform = None
    size = operator.index(size)
    resize = operator.index(resize)
    if seed is not None:
        seed = operator.index(seed)
        if seed < 0:
            raise ValueError("seed must be >= 0")
    epoch, index = operator.index(epoch), operator.index(index)
    if epoch < 0 or index < 0:
        raise ValueError("epoch and index must be >= 0")
    out = _sophon.prep(jpeg, box, size=size, flip=bool(flip), format=format, transform=transform,
                       resize=resize, mean=mean, std=std, seed=seed, epoch=epoch, index=index,
                       scale=scale, ratio=ratio, fast=bool(fast))
    return np.frombuffer(out, dtype=_dtype(format)).reshape(_shape(format, size))


def probe(jpeg):
    """(width, height) of a JPEG from its header, without decoding."""
    return _sophon.probe(jpeg)


def draw_crop(width, height, seed, epoch, index, *, scale=None, ratio=None):
    """((x, y, w, h), flip): the box and flip the loader draws for dataset sample `index` of
    `epoch` in an image of width x height, as torchvision's RandomResizedCrop.get_params (scale
    and ratio its ranges, default (0.08, 1) and (3/4, 4/3)) and RandomHorizontalFlip(0.5) do,
    from a counter-based generator keyed by (seed, epoch, index)."""
    for name, v in (("seed", seed), ("epoch", epoch), ("index", index)):
        if operator.index(v) < 0:
            raise ValueError(f"{name} must be >= 0")
    return _sophon.draw_crop(width, height, seed, epoch, index, scale=scale, ratio=ratio)


Batch = collections.namedtuple("Batch", "images labels indices errors names first")
Batch.__doc__ = """One batch with everything the loader knows about it: images and labels as
epoch() yields them, the dataset indices (objects sorted by name) as uint64, the errors (0 or the
negative errno of a sample that failed; its pixels are zeros) as int32, the object names, and the
position of the first sample in this shard's epoch."""


class Loader:
    """Training (or validation) epochs of a dataset in a Ceph pool, through libsophon's loader.

    The dataset is one `sophon put --dataset NAME --labels-from-dirs` stored and `sophon profile`
    profiled. Each sample is prepared in its OSD or here, as the plan of `policy` says; the bytes
    never depend on where. transform="train" is RandomResizedCrop(size, scale, ratio) +
    RandomHorizontalFlip with a shuffle per (seed, epoch); "val" is Resize(resize) +
    CenterCrop(size) in dataset order. rank/world split every epoch into disjoint shards that
    together cover it exactly once.

    conf None means $CEPH_CONF, then Ceph's search path; client_id None means client.admin;
    namespace is the RADOS namespace the objects were put in (`sophon put -N`; None: the one put
    recorded in the dataset's index; another one raises OSError EXDEV).
    threads 0 means one worker per online CPU; window is the RADOS operations in flight (0: the
    loader chooses per epoch, enough reads of the dataset's median object to keep 0.3 s of the
    link's bytes in flight, 32..256);
    prefetch the batches prepared ahead of the one being consumed (0: the loader chooses per
    epoch, at least 1 + window / batch_size, more where the plan's longest preparation in the
    OSDs would outlast the link's reading of the ring).
    stages restricts what the plan may choose, e.g. "stored,u8" (None: every stage: stored, the
    lossless crop, u8, f32).

    trace, a callable, is called with a dict per sample delivered, in position order, as each
    batch is taken: `sophon load --trace`'s columns (epoch, position, index, object, planned and
    stage: where the plan put it and what came back, demoted, ahead, retries, error, bytes and
    planned_bytes, planned_osd_s and osd_cpu_s, planned_client_s and client_cpu_s, and
    issued_s, completed_s, ready_s, delivered_s: seconds from the epoch's start). It shows where
    an epoch waited.

    One thread at a time: a call while another thread is inside the loader raises RuntimeError.
    Close it with close() or a `with` block (garbage collection closes it too).
    """

    def __init__(self, pool, dataset, conf=None, client_id=None, policy="selective",
                 format="f32", batch_size=32, transform="train", size=224, rank=0, world=1, *,
                 resize=256, scale=None, ratio=None, mean=None, std=None, threads=0, window=0,
                 keyring=None, stages=None, prefetch=0, namespace=None, trace=None):
        if trace is not None and not callable(trace):
            raise TypeError("trace must be a callable taking a dict per sample, or None")
        self._trace = trace
        self.format = format
        self.size = operator.index(size)
        self.batch_size = operator.index(batch_size)
        self.transform = transform
        self.rank, self.world = operator.index(rank), operator.index(world)
        self._generation = 0
        self._l = _sophon.Loader(pool, dataset, conf=conf, client_id=client_id, policy=policy,
                                 format=format, batch_size=self.batch_size, transform=transform,
                                 size=self.size, resize=operator.index(resize), scale=scale,
                                 ratio=ratio, mean=mean, std=std, threads=operator.index(threads),
                                 window=operator.index(window), rank=self.rank, world=self.world,
                                 keyring=keyring, stages=stages,
                                 prefetch=operator.index(prefetch), namespace=namespace,
                                 trace=trace is not None)
        self.classes = self._l.classes()
        self.dataset_size = self._l.dataset_size()

    def __len__(self):
        """Samples of this shard per epoch."""
        n = self.dataset_size
        return n // self.world + (1 if self.rank < n % self.world else 0)

    def batches(self, seed=0, epoch=0, copy=False):
        """Yields Batch tuples of epoch `epoch` of this shard (see epoch())."""
        seed, epoch = operator.index(seed), operator.index(epoch)
        if seed < 0 or epoch < 0:
            raise ValueError("seed and epoch must be >= 0")
        self._l.epoch_start(seed, epoch)
        self._generation += 1
        generation = self._generation
        shape = _shape(self.format, self.size)
        dtype = _dtype(self.format)
        while True:
            if generation != self._generation:
                raise RuntimeError("another epoch of this loader was started")
            b = self._l.next()
            if b is None:
                return
            if self._trace is not None:
                for record in self._l.trace_records():
                    self._trace(record)
            data, labels, indices, errors, names, first = b
            images = np.frombuffer(data, dtype=dtype).reshape((len(names),) + shape)
            if copy:
                images = images.copy()
            yield Batch(images, np.frombuffer(labels, dtype=np.int32).astype(np.int64),
                        np.frombuffer(indices, dtype=np.uint64),
                        np.frombuffer(errors, dtype=np.intc), names, first)

    def epoch(self, seed=0, epoch=0, copy=False):
        """Yields (images, labels) of epoch `epoch` of this shard, in sampler order: images a
        (n, size, size, 3) uint8 or (n, 3, size, size) float32 array, labels int64 (-1: none).

        Without copy, images is a view of the loader's own batch memory: no copy is made, and it
        is valid until the next batch is asked for (the loader then reuses that memory for later
        samples; reading it is never a crash, only other samples). Keep a batch past that with
        copy=True or images.copy(). A sample that failed (its name, errno and a warning are
        logged) has zero pixels; batches() tells which.
        """
        for b in self.batches(seed, epoch, copy):
            yield b.images, b.labels

    def stats(self):
        """Statistics of the current (or last) epoch of this shard, as `sophon load` prints them:
        samples, failed, samples_per_s, bytes_received, bytes_by_stage, offloaded, retries,
        fallbacks, demoted (planned in the OSDs, read as stored not to keep the link waiting),
        ahead (preparations started ahead of their turn, in the window's places kept for them),
        prefetch (the ring's depth this epoch), window (its operations in flight at most),
        elapsed_s, client_cpu_s, osd_cpu_s (the preparations'), osd_process_s (the OSD
        processes' whole CPU over the epoch, this rank's share), osd_op_s (their CPU per
        operation beyond the preparations, as the plan counted it), msgr_cpu_s (this client's
        librados messenger threads' CPU over the epoch, taking the responses in) and
        client_byte_s (their CPU per byte received, as the plan counted it against the client's
        cores), the plan's predicted_bytes,
        predicted_epoch_s, crop_work (decoding this epoch's random crops against the mean
        crop's: above 1, every plan that decodes them takes longer), ..."""
        return self._l.stats()

    def close(self):
        """Frees the loader: its threads, connection and memory (idempotent). Views of its last
        batch that are still alive keep the batch memory until they go."""
        self._l.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
