#!/usr/bin/python3
"""ImageNet-style training from a sophon dataset in Ceph: a train and a val loader, resnet18,
SGD, a few epochs, accuracy printed.

    eval "$(vstart/vstart.sh env)"       # or CEPH_CONF=... for any cluster
    PYTHONPATH=build/python /usr/bin/python3 examples/train.py --pool sophon --dataset photos \\
        --id sophon --epochs 3 --size 128

The dataset is one `sophon put --dataset NAME --labels-from-dirs TREE` stored and `sophon
profile` profiled. Training samples are RandomResizedCrop + RandomHorizontalFlip, validation
samples Resize + CenterCrop, both as torchvision makes them, prepared in the OSDs or here as the
loader's policy decides. With torchrun, each rank gets its own shard of every epoch
(RANK/WORLD_SIZE, or torch.distributed once initialized).
"""

import argparse
import time

import torch
import torch.utils.data
import torchvision

import sophon.torch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pool", default="sophon")
    p.add_argument("--dataset", required=True)
    p.add_argument("--conf", default=None, help="ceph.conf (default: $CEPH_CONF)")
    p.add_argument("--id", default=None, help="client id (default: admin)")
    p.add_argument("--policy", default="selective")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--size", type=int, default=224, help="training and validation side")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--arch", default="resnet18", help="a torchvision.models constructor")
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop each training epoch after this many steps (0: the whole epoch)")
    p.add_argument("--threads", type=int, default=0, help="loader threads (0: the CPUs)")
    return p.parse_args()


def main():
    a = parse_args()
    common = dict(pool=a.pool, dataset=a.dataset, conf=a.conf, client_id=a.id, policy=a.policy,
                  batch_size=a.batch, size=a.size, threads=a.threads)
    train_ds = sophon.torch.SophonDataset(transform="train", **common)
    # Resize(size * 8 / 7) + CenterCrop(size): ImageNet's 256/224 at any size.
    val_ds = sophon.torch.SophonDataset(transform="val", resize=a.size * 8 // 7, **common)
    train = torch.utils.data.DataLoader(train_ds, batch_size=None)
    val = torch.utils.data.DataLoader(val_ds, batch_size=None)
    classes = train_ds.classes
    print(f"{a.dataset}: {train_ds.dataset_size} samples, {len(classes)} classes, "
          f"rank {train_ds.rank} of {train_ds.world}")

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.arch)(weights=None, num_classes=len(classes))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, a.epochs))
    loss_fn = torch.nn.CrossEntropyLoss()

    for epoch in range(a.epochs):
        train_ds.set_epoch(epoch)
        model.train()
        t0, seen, total_loss = time.time(), 0, 0.0
        for step, (images, labels) in enumerate(train):
            loss = loss_fn(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += len(labels)
            total_loss += float(loss) * len(labels)
            if a.max_steps and step + 1 >= a.max_steps:
                break
        sched.step()
        st = train_ds.stats()
        model.eval()
        correct = count = 0
        with torch.no_grad():
            for images, labels in val:
                correct += int((model(images).argmax(1) == labels).sum())
                count += len(labels)
        print(f"epoch {epoch}: train loss {total_loss / max(seen, 1):.4f} over {seen} samples "
              f"in {time.time() - t0:.1f} s; loader {st['samples_per_s']:.0f} samples/s, "
              f"{st['offloaded']} offloaded, {st['bytes_received'] / 1e6:.1f} MB received; "
              f"val accuracy {100.0 * correct / max(count, 1):.1f}% of {count}", flush=True)
    train_ds.close()
    val_ds.close()


if __name__ == "__main__":
    main()
