"""Where dask-ssl's numba kernels are cached, and compiling or loading them ahead of their
first call.

Where: ``kernels/<key>/`` under dask-ssl's cache directory
(:func:`dask_ssl.cachedir.kernel_cache_dir`: ``$DASK_SSL_KERNEL_CACHE``, else
``$DASK_SSL_CACHE/kernels``, else ``$XDG_CACHE_HOME/dask-ssl/kernels`` or
``~/.cache/dask-ssl/kernels``), not beside the source: an install in a read-only
site-packages caches there too, and so does each worker machine on its own disk. ``<key>``
hashes the numba and Python versions and the text of every module of the package that defines
kernels: numba checks only the source file of the kernel it loads, so a kernel that inlines a
helper from another file (the kNN search's heaps, distances, random numbers) would load stale
after that file changed. A new release, or any edited kernel source, gets a new directory and
compiles anew; older directories are never read again (delete them to reclaim the space).
With that directory turned off (``DASK_SSL_KERNEL_CACHE=off``, or ``DASK_SSL_CACHE=off``) or
not writable, numba's own places serve: beside the source, else its per-user cache.

Ahead: numba compiles a kernel on its first call with new argument types (0.1-3 s of CPU each,
the first in a process also sets numba's compiler up), or loads it from the disk cache (tens
of ms). :func:`compile_ahead` does either, before the call, for the argument types listed in
``kernel_signatures.txt`` (what the estimators' fits called, recorded by
:func:`write_signatures`). The first import of an install compiles every listed call into the
cache, in parallel processes (:mod:`dask_ssl.compile_once`, by :func:`listed_jobs` and
:func:`compile_job`); after that, ``dask-ssl fit`` loads the chosen estimator's family
(:data:`FAMILIES`) in a thread from its first statement (:func:`compile_in_background`), a
worker process loads them when it starts (:class:`dask_ssl.cluster.WarmWorker`), and
``dask-ssl compile`` makes every family ready in one process. This module imports neither Dask
nor numba at import.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import re
import sys
import threading
from pathlib import Path

from .cachedir import kernel_cache_dir

log = logging.getLogger(__name__)

#: This package's directory: the kernels the locator places are those defined under it.
PACKAGE_DIR = str(Path(__file__).resolve().parent)
#: The signatures compiled ahead, one kernel call per line: ``module:qualname<TAB>types``.
SIGNATURES_FILE = Path(PACKAGE_DIR) / "kernel_signatures.txt"

#: The modules of the kernels each reader calls, by ``data.source`` of a workflow.
READERS = {"svmlight": ("dask_ssl.data._numbers", "dask_ssl.data.svmlight"),
           "kdd99": ("dask_ssl.data._numbers", "dask_ssl.data.kdd99")}
#: The modules of the kernels each estimator family's fit calls, roughly in the order they are
#: needed. A family may list modules it does not always reach.
_LINEAR = ("dask_ssl.linalg.distinct", "dask_ssl.linalg.kernels", "dask_ssl.models._s3vm")
_GRAPH = ("dask_ssl.graph._nndescent.duplicates", "dask_ssl.graph._nndescent.rng",
          "dask_ssl.graph._nndescent.heaps", "dask_ssl.graph._nndescent.trees",
          "dask_ssl.graph._nndescent.descent", "dask_ssl.graph._nndescent.search_graph",
          "dask_ssl.graph._nndescent.search", "dask_ssl.graph._products",
          "dask_ssl.graph.precond")
_END = ("dask_ssl.workflow.outputs",)
FAMILIES = {
    "linear": _LINEAR + ("dask_ssl.kernels.blocks",) + _END,
    "kernel": _LINEAR + ("dask_ssl.kernels.blocks",) + _END,
    "graph": ("dask_ssl.linalg.distinct",) + _GRAPH + _LINEAR[1:] + _END,
    "manifold": ("dask_ssl.linalg.distinct",) + _GRAPH + _LINEAR[1:]
    + ("dask_ssl.kernels.blocks",) + _END,
}


# where ---------------------------------------------------------------------------------------
#: What marks a module that defines compiled code: a numba decorator, or a call of ``njit``.
_DEFINES_KERNELS = re.compile(
    rb"^[ \t]*@(numba\.)?(njit|jit|overload|overload_method|intrinsic|register_jitable)\b"
    rb"|\bnjit\(", re.M)


def _kernel_sources(package_dir: str):
    """The package's modules that define numba kernels, as (relative path, bytes), sorted."""
    out = []
    for path in sorted(Path(package_dir).rglob("*.py")):
        text = path.read_bytes()
        if _DEFINES_KERNELS.search(text):
            out.append((path.relative_to(package_dir).as_posix(), text))
    return out


def source_key(package_dir: str = PACKAGE_DIR) -> str:
    """The cache key of the kernels of the package at ``package_dir``: numba's and Python's
    versions and the text of every module that defines kernels."""
    import numba

    h = hashlib.sha256(f"{numba.__version__}\0{sys.version}\0".encode())
    for rel, text in _kernel_sources(package_dir):
        h.update(rel.encode() + b"\0" + hashlib.sha256(text).digest())
    return h.hexdigest()[:20]


@functools.lru_cache(maxsize=None)
def _key_of(package_dir: str) -> str:
    return source_key(package_dir)


def kernel_dir() -> str | None:
    """This process's directory of compiled kernels (``<root>/<key>``), or None when off."""
    root = kernel_cache_dir()
    return None if root is None else os.path.join(root, _key_of(PACKAGE_DIR))


def install_locator() -> bool:
    """Make numba cache this package's ``cache=True`` kernels in :func:`kernel_dir`; return
    whether it could. Must run before the kernel modules are imported (``dask_ssl`` does it
    on import). Other code's kernels are left where numba puts them; an explicit
    ``NUMBA_CACHE_DIR`` still wins."""
    try:
        from numba.core import caching
        base = (caching._SourceFileBackedLocatorMixin, caching._CacheLocator)
        # CacheImpl since numba 0.61 (earlier _CacheImpl)
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        classes = impl._locator_classes
    except (ImportError, AttributeError) as exc:  # a numba without these internals
        log.debug("numba's cache locators not found: %r", exc)
        return False
    if any(getattr(c, "_dask_ssl", False) for c in classes):
        return True
    _lock_saves(caching.IndexDataCacheFile)

    class PackageCacheLocator(*base):
        """numba cache locator: this package's kernels in :func:`kernel_dir`."""

        _dask_ssl = True

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), PACKAGE_DIR)
            self._cache_path = os.path.normpath(os.path.join(kernel_dir(), rel))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            path = os.path.abspath(py_file)
            if (not path.startswith(PACKAGE_DIR + os.sep) or not os.path.exists(path)
                    or kernel_cache_dir() is None):
                return None
            self = cls(py_func, path)
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: numba's own locators next
                return None
            return self

    # after numba's NUMBA_CACHE_DIR locator, if there is one, before all others
    user = [i for i, c in enumerate(classes) if "UserProvided" in c.__name__]
    classes.insert(user[0] + 1 if user else 0, PackageCacheLocator)
    return True


def _lock_saves(cache_file_class) -> None:
    """Make numba's saves into the kernel cache hold a file lock in the kernel's folder.

    A save reads the kernel's index, adds the new argument types and writes it back, then
    the compiled code: two processes saving different argument types of one kernel at once
    (the compiles at first import, worker processes) could leave the index naming one code
    file for both, and a later process would load the other types' code."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: saves as numba does them
        return
    original = cache_file_class.save

    def save(self, key, data):
        root = kernel_cache_dir()
        if root is None or not self._cache_path.startswith(root + os.sep):
            return original(self, key, data)
        try:
            fd = os.open(os.path.join(self._cache_path, ".save.lock"),
                         os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return original(self, key, data)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return original(self, key, data)
        finally:
            os.close(fd)

    cache_file_class.save = save


# ahead ---------------------------------------------------------------------------------------
#: Every module with ``cache=True`` kernels, for ``dask-ssl compile`` and the signature list.
#: Kernels of one algorithm only (deterministic annealing), beside its family's.
ALGORITHM_MODULES = {"da": ("dask_ssl.models.da",), "kda": ("dask_ssl.models.da",)}
ALL_MODULES = tuple(dict.fromkeys(
    [m for group in (*READERS.values(), *FAMILIES.values(), *ALGORITHM_MODULES.values())
     for m in group] + ["dask_ssl.data.generators"]))


def _dispatchers(module):
    import numba.core.registry

    return [(name, fn) for name, fn in vars(module).items()
            if isinstance(fn, numba.core.registry.CPUDispatcher)
            and fn.py_func.__module__ == module.__name__]


@functools.lru_cache(maxsize=1)
def listed_signatures() -> dict:
    """``kernel_signatures.txt`` as {(module, qualname): [argument types, ...]}; a line whose
    types this numba cannot build is skipped (that kernel compiles on its first call)."""
    from numba.core import types

    names = {k: v for k, v in vars(types).items() if not k.startswith("_")}
    names["bool"] = types.boolean
    out: dict = {}
    try:
        text = SIGNATURES_FILE.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        where, _, sig = line.partition("\t")
        module, _, qualname = where.partition(":")
        try:
            args = eval(sig, {"__builtins__": {}}, names)  # noqa: S307 (our own file)
        except Exception as exc:
            log.debug("skipping signature %r: %r", line, exc)
            continue
        out.setdefault((module, qualname), []).append(tuple(args))
    return out


def compile_kernels(module, only=None) -> tuple[int, int]:
    """Make every kernel of ``module`` (those named in ``only`` if given) ready for the
    argument types listed for it and those already in its disk cache: loaded from the cache
    where it is there, compiled (and cached) where not. Returns (kernels ready, of which
    compiled)."""
    listed = listed_signatures()
    ready = compiled = 0
    hook = getattr(module, "compile_listed", None)  # kernels generated at run time
    for (mod, qualname), sigs in listed.items():
        if (hook is None or mod != module.__name__ or "[" not in qualname
                or (only is not None and qualname not in only)):
            continue
        for sig in sigs:
            try:
                ready += 1
                compiled += hook(qualname, sig)
            except Exception as exc:
                log.debug("could not compile %s%s: %r", qualname, sig, exc)
    for name, fn in _dispatchers(module):
        if only is not None and fn.py_func.__qualname__ not in only:
            continue
        sigs = list(listed.get((module.__name__, fn.py_func.__qualname__), []))
        try:
            magic = fn.targetctx.codegen().magic_tuple()
            sigs += [sig for sig, key_magic, _ in fn._cache._cache_file._load_index()
                     if key_magic == magic]
        except Exception as exc:  # a numba without that index: the listed ones only
            log.debug("no cache index for %s: %r", name, exc)
        for sig in dict.fromkeys(sigs):
            if tuple(sig) in fn.overloads:
                continue
            misses = sum(fn._cache_misses.values())
            try:
                fn.compile(tuple(sig))
            except Exception as exc:  # ahead of time must never break a run
                log.debug("could not compile %s%s: %r", name, sig, exc)
                continue
            ready += 1
            compiled += sum(fn._cache_misses.values()) - misses
    return ready, compiled


def compile_ahead(modules) -> tuple[int, int]:
    """Import ``modules`` (names) and :func:`compile_kernels` each; return the totals."""
    totals = [compile_kernels(importlib.import_module(name)) for name in modules]
    return sum(t[0] for t in totals), sum(t[1] for t in totals)


def listed_jobs() -> list:
    """The listed kernels as units of work for separate processes: (module, qualnames), one
    kernel each, but one per generated file for the generated kernels (writing that file
    changes the source stamp numba checks, so its kernels are compiled together)."""
    jobs: dict = {}
    for module, qualname in listed_signatures():
        unit = qualname[qualname.index("["):] if "[" in qualname else qualname
        jobs.setdefault((module, unit), []).append(qualname)
    return [(module, tuple(names)) for (module, _), names in jobs.items()]


def compile_job(module: str, qualnames) -> tuple[int, int]:
    """:func:`compile_kernels` of the kernels ``qualnames`` of ``module`` (a name); (0, 0)
    when the module cannot be imported (a list from another version)."""
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        log.debug("cannot import %s: %r", module, exc)
        return 0, 0
    return compile_kernels(loaded, only=set(qualnames))


def compile_in_background(modules) -> threading.Thread:
    """Import ``modules`` (names) here, then :func:`compile_kernels` them in that order in a
    daemon thread. (The imports stay in the calling thread: a thread importing beside
    another can meet a module half done and fail with "cannot import name".) A call that
    needs a kernel the thread is compiling waits for it on numba's compiler lock."""
    loaded = [importlib.import_module(name) for name in modules]
    thread = threading.Thread(target=lambda: [compile_kernels(m) for m in loaded],
                              name="dask-ssl-kernels", daemon=True)
    thread.start()
    return thread


def write_signatures(path=SIGNATURES_FILE) -> int:
    """Write the argument types of every kernel cached in :func:`kernel_dir` (or compiled in
    this process) to ``path``, merged with those listed there; return how many lines.

    Run after fitting each family once (``benchmarks/bench_first_fit.py``, the tests), so
    that a fresh install compiles them ahead."""
    lines = set()
    for (module, qualname), sigs in listed_signatures().items():
        lines.update(f"{module}:{qualname}\t{tuple(sig)!r}" for sig in sigs)
    for name in ALL_MODULES:
        module = importlib.import_module(name)
        kernels = [(fn.py_func.__qualname__, fn) for _, fn in _dispatchers(module)]
        if hasattr(module, "generated_kernels"):
            kernels += module.generated_kernels()
        for qualname, fn in kernels:
            sigs = list(fn.signatures)
            try:
                sigs += [sig for sig, _, _ in fn._cache._cache_file._load_index()]
            except Exception:
                pass
            lines.update(f"{name}:{qualname}\t{tuple(sig)!r}" for sig in sigs)
    header = ("# Argument types of dask-ssl's numba kernels, compiled ahead of their first call\n"
              "# (dask_ssl.kernel_cache). Written by `python -m dask_ssl.kernel_cache`.\n")
    Path(path).write_text(header + "".join(f"{line}\n" for line in sorted(lines)))
    listed_signatures.cache_clear()
    return len(lines)


def compile_imported_kernels() -> int:
    """:func:`compile_kernels` of every dask-ssl module imported so far; return how many
    kernels are ready."""
    return sum(compile_kernels(module)[0] for name, module in list(sys.modules.items())
               if name.startswith("dask_ssl.") and module is not None)

if __name__ == "__main__":
    print(f"{write_signatures()} signatures written to {SIGNATURES_FILE}")
