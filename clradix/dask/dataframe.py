"""A ``sort_function`` for ``dask.dataframe.DataFrame.sort_values``: each partition sorted by its
key column(s) on the worker's device.

    ddf.sort_values(["a", "b"], sort_function=clradix.dask.sort_function)

Dask does the partitioning and the shuffle; this function orders the rows of one pandas
partition with clradix's argsort, least significant column first (successive stable argsorts).
Per column ``ascending`` (a bool or a list) and ``na_position`` (``"last"``, the default, or
``"first"``) act as in pandas; missing values (NaN, NaT, pandas' NA) keep their input order.
The sort is stable, ascending and descending (pandas' default single-column sort is not). Key
columns: integers, floats, bools, datetimes and timedeltas (numpy or pandas' nullable dtypes);
a frame with any other key column (strings, categories, ...) is sorted by pandas itself
(``kind="stable"``).
"""

from __future__ import annotations

import numpy as np

from ..core.keys import KEY_DTYPES
from .engines import engine as _engine

_KEYS = set(KEY_DTYPES)


def sort_function(df, by, ascending=True, na_position: str = "last", ignore_index: bool = False,
                  engine: str = "clradix", **kwargs):
    """``df`` (a pandas DataFrame or Series) sorted by the column(s) ``by`` (ignored for a
    Series) on a device of this process. Other keyword arguments (as pandas' ``sort_values``) are
    passed to pandas when it sorts instead."""
    eng = _engine(engine)
    if na_position not in ("first", "last"):
        raise ValueError(f"na_position must be 'first' or 'last', got {na_position!r}")
    series = getattr(df, "ndim", 2) == 1
    # as pandas: a list names several columns, anything else (a tuple too) is one label
    cols = [None] if series else (list(by) if isinstance(by, list) else [by])
    if isinstance(ascending, (list, tuple)):
        asc = [_flag(a) for a in ascending]
    else:
        asc = [_flag(ascending)] * len(cols)
    if len(asc) != len(cols):
        raise ValueError(f"ascending has {len(asc)} entries for {len(cols)} key columns: give "
                         f"one bool, or a list of one bool per column of by")
    columns = [df if c is None else df[c] for c in cols]
    keys = [_key(col) for col in columns]
    if any(k is None for k in keys) or kwargs:
        args = {} if series else {"by": by}
        return df.sort_values(**args, ascending=ascending, na_position=na_position,
                              ignore_index=ignore_index, kind="stable", **kwargs)
    with eng.task():   # one device of this process for the partition's sorts
        order = _order(eng, keys, asc, na_position, len(df))
    out = df.iloc[order]
    if ignore_index:
        out = out.reset_index(drop=True)
    return out


def _flag(value):
    """An ``ascending`` entry as pandas takes it: a bool, or the integer 0 or 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"ascending: expected a bool (or 0 or 1), or a list of them, got "
                    f"{type(value).__name__} {value!r}")


def _order(eng, keys, asc, na_position, n):
    """The stable order of ``n`` rows by the ``keys`` ((values, missing mask or None) of each
    column, the first the most significant), each ascending as ``asc`` says."""
    order = np.arange(n, dtype=np.int64)
    for (values, missing), up in zip(reversed(keys), reversed(asc)):
        values = values[order]
        if missing is None:
            order = order[eng.argsort(values, descending=not up)]
            continue
        missing = missing[order]
        present = np.flatnonzero(~missing)
        ranked = order[present[eng.argsort(values[present], descending=not up)]]
        absent = order[missing]
        order = np.concatenate([ranked, absent] if na_position == "last" else [absent, ranked])
    return order


def _key(col):
    """``(numpy keys, missing mask or None)`` of a pandas Series, or None when clradix cannot
    sort its dtype."""
    import pandas as pd
    dt = col.dtype
    if isinstance(dt, pd.api.extensions.ExtensionDtype):
        np_dt = getattr(dt, "numpy_dtype", None)
        if np_dt is None or not (np_dt in _KEYS or np_dt == np.bool_):
            return None
        missing = np.asarray(col.isna())
        values = col.to_numpy(dtype=np_dt, na_value=np_dt.type(0))
        return _as_key(values), (missing if missing.any() else None)
    values = col.to_numpy()
    if values.dtype.kind in "mM":
        missing = np.isnat(values)
        return values.view(np.int64), (missing if missing.any() else None)
    if not (values.dtype in _KEYS or values.dtype == np.bool_):
        return None
    missing = np.isnan(values) if values.dtype.kind == "f" else None
    return _as_key(values), (missing if missing is not None and missing.any() else None)


def _as_key(values):
    return values.view(np.uint8) if values.dtype == np.bool_ else values
