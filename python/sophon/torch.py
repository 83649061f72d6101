"""sophon.torch: a sophon dataset as a PyTorch IterableDataset.

    import torch, sophon.torch
    ds = sophon.torch.SophonDataset(pool="sophon", dataset="photos", transform="train",
                                    batch_size=32)
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for images, labels in torch.utils.data.DataLoader(ds, batch_size=None):
            ...   # images float32 (B, 3, 224, 224), labels int64 (B,)

The dataset yields whole batches (the loader batches), so the DataLoader takes batch_size=None.
Each epoch is split between the distributed ranks (torch.distributed's rank and world size when
it is initialized, else the environment's RANK and WORLD_SIZE, else 0 of 1) and, inside a rank,
between the DataLoader's workers, with no overlap and no gap.
"""

import os

import torch
import torch.utils.data

import sophon


def _rank_world():
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class SophonDataset(torch.utils.data.IterableDataset):
    """Batches of a sophon dataset as torch tensors: images (B, 3, size, size) float32 (format
    "f32", the default) or (B, size, size, 3) uint8 ("u8"), labels int64.

    Keyword arguments are sophon.Loader's (pool, dataset, conf, client_id, policy, format,
    batch_size, transform, size, resize, scale, ratio, mean, std, threads, window, keyring,
    stages, prefetch, namespace) and seed. rank and world default to the distributed ones (see the module's doc).

    The loader is opened lazily in the process that iterates (a DataLoader worker, or this one)
    and kept for the next epochs. Without copy (the default) the tensors share the loader's batch
    memory and are valid until the next batch is asked for, which is how a training loop uses
    them; copy=True gives each batch its own memory (a memcpy of the batch).
    """

    def __init__(self, pool, dataset, *, seed=0, rank=None, world=None, copy=False, **options):
        super().__init__()
        if (rank is None) != (world is None):
            raise ValueError("give both rank and world, or neither")
        if rank is None:
            rank, world = _rank_world()
        if not 0 <= rank < world:
            raise ValueError(f"rank must be 0..world-1, not {rank} of {world}")
        self.pool, self.dataset = pool, dataset
        self.seed, self.rank, self.world, self.copy = seed, rank, world, copy
        self.options = options
        self.epoch = 0
        self._loader = None
        self._loader_key = None

    def set_epoch(self, epoch):
        """The epoch the next iteration delivers (its shuffle and crops), as
        DistributedSampler.set_epoch."""
        self.epoch = int(epoch)

    def _open(self):
        info = torch.utils.data.get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        # Worker w of rank r is shard r * workers + w of world * workers: the ranks' shards split
        # again, still covering the epoch exactly once.
        key = (self.rank * workers + worker, self.world * workers, os.getpid())
        if self._loader is None or self._loader_key != key:
            if self._loader is not None:
                self._loader.close()
            self._loader = sophon.Loader(self.pool, self.dataset, rank=key[0], world=key[1],
                                         **self.options)
            self._loader_key = key
        return self._loader

    def __iter__(self):
        loader = self._open()
        for images, labels in loader.epoch(self.seed, self.epoch, copy=self.copy):
            yield torch.from_numpy(images), torch.from_numpy(labels)

    def __len__(self):
        """Batches of this rank per epoch (every worker together may give a few more: each
        worker's last batch may be short)."""
        n = self.dataset_size
        mine = n // self.world + (1 if self.rank < n % self.world else 0)
        b = self.options.get("batch_size", 32)
        return (mine + b - 1) // b

    @property
    def dataset_size(self):
        return self._open().dataset_size

    @property
    def classes(self):
        return self._open().classes

    def stats(self):
        """The loader's statistics of the last epoch in this process (see sophon.Loader)."""
        return self._open().stats()

    def close(self):
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def __getstate__(self):
        # A DataLoader worker gets the options, never the parent's open loader.
        state = self.__dict__.copy()
        state["_loader"] = None
        state["_loader_key"] = None
        return state
