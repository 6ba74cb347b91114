"""Template rendering and the program cache.

Kernel sources are Mako templates in ``cl_templates/`` (one ``.cl.mako`` per kernel family), rendered
with ``strict_undefined=True``: a parameter the template needs but the caller forgot is an error, not
an empty string. Built programs are memoised per (context, template, parameters), one cache per
context shared by every Sorter and Selector of it (``programs_for``); pyopencl's binary cache on
disk keeps the compiled code between processes.
"""

import logging
import os
import threading
import time
import weakref
from pathlib import Path

import pyopencl as cl
from mako import exceptions as mako_exceptions
from mako.lookup import TemplateLookup

from . import runtime_faults
from .declarations import parse_kernels


class TemplateRenderError(RuntimeError):
    """A kernel template failed to render; the message shows the template, its arguments and where."""


class KernelBuildError(RuntimeError):
    """The OpenCL compiler refused a rendered kernel; the message names the device, the parameters
    and includes the build log."""


def template_dir():
    """The folder holding the ``.mako`` templates: the installed package, or the source checkout."""
    try:
        from .. import cl_templates  # installed wheel: clradix/cl_templates
        return Path(cl_templates.__file__).parent
    except ImportError:
        here = Path(__file__).resolve().parents[2] / "cl_templates"
        if here.is_dir():
            return here
        raise


_lookup = None
_lookup_lock = threading.Lock()


def _get_lookup():
    global _lookup
    with _lookup_lock:
        if _lookup is None:
            _lookup = TemplateLookup(directories=[str(template_dir())], strict_undefined=True,
                                     input_encoding="utf-8")
        return _lookup


def render(template_name, **params):
    """Render ``cl_templates/<template_name>`` with ``params``; TemplateRenderError on failure."""
    try:
        return _get_lookup().get_template(template_name).render(**params)
    except Exception as exc:
        trace = mako_exceptions.text_error_template().render()
        raise TemplateRenderError(
            f"rendering {template_name} with {_fmt_params(params)} failed: "
            f"{type(exc).__name__}: {exc}\n{trace}") from exc


def _fmt_params(params):
    return ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()))


#: A build still running after this many seconds is announced on the ``clradix.build`` logger at
#: WARNING level, which Python prints on stderr when logging is not configured: a first call on a
#: CPU compiler can otherwise be silent for seconds. CLRADIX_QUIET_BUILDS=1, or that logger's
#: level above WARNING, silences it.
BUILD_NOTICE_SECONDS = 1.0
#: one notice per context in this many seconds (a call that builds several programs says so once)
BUILD_NOTICE_GAP = 30.0
build_log = logging.getLogger("clradix.build")


def _quiet():
    return os.environ.get("CLRADIX_QUIET_BUILDS", "").strip() not in ("", "0")


class ProgramCache:
    """Built programs of one context, keyed by template and parameters. Thread-safe."""

    def __init__(self, context):
        self.context = context
        self._programs = {}
        self._declarations = {}
        self._sources = {}   # (template, parameters) -> rendered source, until parsed
        self._lock = threading.Lock()
        self._noticed = -BUILD_NOTICE_GAP   # perf_counter() of the last build notice

    def get(self, template_name, params, options=()):
        """The built program of ``template_name`` rendered with ``params``."""
        key = (template_name, tuple(sorted(params.items())), tuple(options))
        with self._lock:
            prg = self._programs.get(key)
            if prg is None:
                prg = self._build(template_name, params, options)
                self._programs[key] = prg
            return prg

    def declarations(self, template_name, params):
        """{kernel name: its parameters} of the rendered program (clradix.core.declarations): the
        one declaration of each kernel's arguments is its ``.mako``."""
        key = (template_name, tuple(sorted(params.items())))
        with self._lock:
            decls = self._declarations.get(key)
            if decls is None:
                source = self._sources.pop(key, None)
                if source is None:
                    source = render(template_name, **params)
                decls = self._declarations[key] = parse_kernels(source)
            return decls

    def _notice(self, template_name):
        """Say, once in BUILD_NOTICE_GAP seconds, that a slow build is running."""
        now = time.perf_counter()
        if now - self._noticed < BUILD_NOTICE_GAP:
            return
        self._noticed = now
        build_log.warning("clradix: building %s kernels for %s (first use of this configuration; "
                          "cached afterwards; CLRADIX_QUIET_BUILDS=1 hides this line)",
                          template_name.split(".")[0],
                          ", ".join(d.name.strip() for d in self.context.devices))

    def _build(self, template_name, params, options):
        start = time.perf_counter()
        timer = None
        if not _quiet() and build_log.isEnabledFor(logging.WARNING):
            timer = threading.Timer(BUILD_NOTICE_SECONDS, self._notice, (template_name,))
            timer.daemon = True
            timer.start()
        try:
            return self._build_program(template_name, params, options, start)
        finally:
            if timer is not None:
                timer.cancel()

    def _build_program(self, template_name, params, options, start):
        source = render(template_name, **params)
        self._sources[(template_name, tuple(sorted(params.items())))] = source
        try:
            if runtime_faults.needs_isolation(self.context):
                device = self.context.devices[0]  # one platform, hence one CPU device
                binary = runtime_faults.build_isolated(device, source, list(options))
                program = runtime_faults.load_binary(self.context, device, binary, options)
            else:
                program = cl.Program(self.context, source).build(options=list(options))
        except (cl.RuntimeError, runtime_faults.IsolatedBuildError) as exc:
            devices = ", ".join(f"{d.name} ({d.platform.name}, driver {d.driver_version})"
                                for d in self.context.devices)
            raise KernelBuildError(
                f"building {template_name} failed on {devices} with {_fmt_params(params)}:\n"
                f"{exc}") from exc
        # a first call of a configuration can spend seconds here (a CPU compiler, no disk cache):
        # say what was built, where, and for how long (python -m clradix -v shows it)
        log = logging.getLogger(__name__)
        if log.isEnabledFor(logging.INFO):
            log.info("built %s (%s%s) on %s in %.3f s", template_name, _fmt_params(params),
                     f"; options {' '.join(options)}" if options else "",
                     ", ".join(d.name.strip() for d in self.context.devices),
                     time.perf_counter() - start)
        return program

    def clear(self):
        with self._lock:
            self._programs.clear()
            self._declarations.clear()
            self._sources.clear()


# Per context, held weakly (the context's programs go with it), under a lock (threads share it).
# pyopencl.tools.first_arg_dependent_memoize does neither: it keeps every context it saw alive in
# a plain dict (its own comment says so), with the memory pools of what it cached.
_caches: "weakref.WeakKeyDictionary[cl.Context, ProgramCache]" = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def programs_for(context):
    """The ProgramCache of ``context``, shared by everything that builds kernels on it (so a
    configuration is rendered and built once per context, whichever Sorter asks first)."""
    with _caches_lock:
        cache = _caches.get(context)
        if cache is None:
            cache = _caches[context] = ProgramCache(context)
        return cache
