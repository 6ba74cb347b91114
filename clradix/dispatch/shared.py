"""The objects that every call on one context shares: its default Sorter and Selector (built
kernels and memory pools reused across calls); and the default queue that
numpy inputs run on.

Each is held weakly per context and made under one lock, for the reasons of core.render's
program caches (pyopencl's first_arg_dependent_memoize keeps contexts alive)."""

from __future__ import annotations

import threading
import weakref
from typing import List, Optional, Tuple, Union, cast

import pyopencl as cl

from ..core.device import default_device
from .selector import Selector
from .sorter import Sorter

_sorters: weakref.WeakKeyDictionary[cl.Context, Sorter] = weakref.WeakKeyDictionary()
_selectors: weakref.WeakKeyDictionary[cl.Context, Selector] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


# (context, its Sorter, its Selector or None) of the last lookup, one tuple (replaced whole: a
# read needs no lock). It keeps nothing alive that the dictionaries do not: a Sorter holds its
# context.
_recent: Tuple[Optional[cl.Context], Optional[Sorter], Optional[Selector]] = (None, None, None)


def sorter_for(context: cl.Context) -> Sorter:
    """The shared default Sorter of ``context`` (built kernels are reused across calls)."""
    global _recent
    recent = _recent
    if recent[0] is context:   # the context of the last call: no lock, no weak-key lookup
        return cast(Sorter, recent[1])
    with _shared_lock:
        s = _sorters.get(context)
        if s is None:
            s = _sorters[context] = Sorter(context)
        _recent = (context, s, _selectors.get(context))
        return s


def selector_for(context: cl.Context) -> Selector:
    """The shared default Selector of ``context`` (it shares the context's Sorter)."""
    global _recent
    recent = _recent
    if recent[0] is context and recent[2] is not None:
        return recent[2]
    sorter = sorter_for(context)
    with _shared_lock:
        s = _selectors.get(context)
        if s is None:
            s = _selectors[context] = Selector(context, sorter=sorter)
        _recent = (context, sorter, s)
        return s


def free_memory(context: Optional[cl.Context] = None) -> None:
    """Release the memory that the functions' pools hold for reuse: the blocks of results that
    were freed (garbage collected) and of temporaries, in the shared Sorter and Selector of
    ``context`` (default: of every context). Results still referenced stay allocated."""
    with _shared_lock:
        owners: List[Union[Sorter, Selector]] = [
            o for c, o in list(_sorters.items()) if context is None or c == context]
        owners += [o for c, o in list(_selectors.items()) if context is None or c == context]
    for owner in owners:
        owner.free_memory()


_default: List[Tuple[cl.CommandQueue, cl.Context]] = []
_default_lock = threading.Lock()


def default_queue() -> cl.CommandQueue:
    """The queue numpy inputs run on: one context and in-order queue on clradix's default device
    (``clradix.core.device.default_device``), made on first use and kept."""
    with _default_lock:
        if not _default:
            # the context is kept beside its queue: Intel's CPU runtime frees a context whose
            # last handle is released although a queue still holds it
            ctx = cl.Context([default_device()])
            _default.append((cl.CommandQueue(ctx), ctx))
        return _default[0][0]


__all__ = ["sorter_for", "selector_for", "free_memory", "default_queue"]
