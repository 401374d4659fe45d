"""A DataLoader whose iterators inherit __next__ from _BaseDataLoaderIter, as torch's do."""


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._loader = loader
        self._i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._i >= len(self._loader.dataset):
            raise StopIteration
        self._i += 1
        return [self._loader.dataset[self._i - 1]]


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    pass


class DataLoader:
    def __init__(self, dataset):
        self.dataset = dataset

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self)
