"""Helpers of test_torch_process_matrix.py that DataLoader workers import (spawn/forkserver
workers unpickle them by module name): one IterableDataset that runs several lazycube torch
datasets in one DataLoader, tagging each item with the dataset it came from.

Kept apart from the test module so that a worker imports torch and nothing else of the tests.
"""

import torch
import torch.utils.data


class Tagged(torch.utils.data.IterableDataset):
    """Yields (tag, item) for every member.

    A member is an IterableDataset (a BatchDataset: it shards itself by get_worker_info()) or a
    map-style WindowDataset, whose windows are taken as a DataLoader sampler would hand them to
    workers: a permutation seeded by the epoch, dealt round-robin over the workers. The epoch is
    a shared-memory tensor, so set_epoch reaches persistent workers too (as BatchDataset's)."""

    def __init__(self, members):
        super().__init__()
        self.members = list(members)  # [(tag, dataset)]
        self._epoch = torch.zeros((), dtype=torch.int64).share_memory_()

    def set_epoch(self, epoch):
        self._epoch.fill_(int(epoch))
        for _tag, ds in self.members:
            if hasattr(ds, "set_epoch"):
                ds.set_epoch(epoch)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        epoch = int(self._epoch.item())
        for tag, ds in self.members:
            if isinstance(ds, torch.utils.data.IterableDataset):
                for item in ds:
                    yield tag, item
            else:
                order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(epoch))
                for i in order.tolist()[worker::workers]:
                    yield tag, ds[i]
