"""A GEPA ``DataLoader`` stand-in keyed by task id (strings), following gepa 0.1.4's
``gepa.core.data_loader.DataLoader`` protocol (``all_ids``, ``fetch``, ``len``): it is not
a sequence, so code that iterates a val set directly fails on it."""


class Loader:
    def __init__(self, items):
        self.items = {t["task_id"]: t for t in items}

    def all_ids(self):
        return list(self.items)

    def fetch(self, ids):
        return [self.items[i] for i in ids]

    def __len__(self):
        return len(self.items)
