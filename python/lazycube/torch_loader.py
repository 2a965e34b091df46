"""What lazycube's torch datasets share about DataLoaders (docs/torch.md "Resume"): a DataLoader
that counts the batches it hands to the training loop -- a dataset's ``state_dict()`` counts
batches the loop received, not ones a worker prefetched, and a plain DataLoader cannot tell the
dataset -- and the order in which a DataLoader takes an IterableDataset's batches from its
workers."""

from __future__ import annotations

import warnings

import torch.utils.data

__all__ = ["CountingLoader", "received_per_worker", "warn_uncounted"]


class CountingLoader(torch.utils.data.DataLoader):
    """A DataLoader over a lazycube torch dataset that adds each batch it yields to the
    dataset's ``_received`` count and records its worker count in ``_received_workers`` (in
    this process: a dataset iterated here, num_workers=0, counts itself)."""

    def __iter__(self):
        dataset = self.dataset
        dataset._received_workers = max(1, int(self.num_workers))
        if self.num_workers == 0:
            yield from super().__iter__()
            return
        for item in super().__iter__():
            dataset._received += 1
            yield item


def received_per_worker(received: int, batches: list) -> list:
    """How many batches of each worker a DataLoader has handed out after `received` in all,
    when worker w yields ``batches[w]``: it takes them round-robin over the workers in order,
    passing over a worker that has run out (torch's _MultiProcessingDataLoaderIter)."""
    got = [0] * len(batches)
    left = int(received)
    while left > 0:
        active = [w for w, n in enumerate(batches) if got[w] < n]
        if not active:
            break
        rounds = min(min(batches[w] - got[w] for w in active), left // len(active))
        if rounds == 0:  # a last, partial round
            for w in active[:left]:
                got[w] += 1
            break
        for w in active:
            got[w] += rounds
        left -= rounds * len(active)
    return got


def warn_uncounted(dataset):
    """Warns when `dataset` was iterated only by the workers of a plain DataLoader this epoch:
    nothing counted what the training loop received, so a state_dict() without `received=`
    would re-deliver every batch already trained on (its ``_yielded_in_workers`` counts what
    workers yielded, ``_received`` what a counting loader or the dataset itself handed out)."""
    if dataset._received == 0 and int(dataset._yielded_in_workers.item()) > 0:
        warnings.warn("state_dict(): this epoch's batches came from DataLoader workers of a plain "
                      "torch.utils.data.DataLoader, which cannot tell the dataset how many the training loop "
                      "received, so this state would deliver them all again; iterate ds.loader(num_workers=...) "
                      "instead, or pass state_dict(received=<batches received>, num_workers=<workers>)",
                      UserWarning, stacklevel=3)
