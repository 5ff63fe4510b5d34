"""Heavy runs as sweeps: independent tasks on a Dask cluster (or in the driver), one writer.

Neither science nor book: this package imports only :mod:`stumplib.core`-level services, numpy and,
inside the functions that need them, dask, distributed and tqdm (``import stumplib.phase`` never
needs dask).

- :mod:`.store`: the run's store (one ``.npz`` or ``.json`` file, a manifest and each completed
  task's result);
- :mod:`.files`: the driver's lock and atomic writes;
- :mod:`.params`: the recorded parameters, compared exactly on resume;
- :mod:`.cluster`: local single-threaded workers, an existing cluster, GPUs as a resource;
- :mod:`.driver`: submit, record each result as it arrives, retry once, count failures;
- :mod:`.cli`: the options and the run every sweep script shares;
- :mod:`.readers`: the stores of the phase runs read back into the layouts chapter 6 uses;
- :mod:`.provenance`: command, commit, machine.

The public names (``from stumplib.sweep import ...``): :class:`Task`, :func:`run_sweep`
(:class:`SweepSummary`), :class:`Store` (:func:`read_store`), :func:`connect`, and the scripts'
shared command line :func:`add_arguments`, :func:`check_arguments`, :func:`run`.

The scripts that use it: ``scripts/phase_minimisers.py``, ``scripts/phase_flat_window.py``,
``scripts/phase_diagram.py``, ``scripts/seed_audit.py`` (and ``scripts/import_legacy_run.py``).
"""
from stumplib.sweep.cli import add_arguments, check_arguments, run
from stumplib.sweep.cluster import connect
from stumplib.sweep.driver import SweepSummary, Task, run_sweep
from stumplib.sweep.store import Store, read_store

__all__ = ["Task", "run_sweep", "SweepSummary", "Store", "read_store", "connect",
           "add_arguments", "check_arguments", "run"]
