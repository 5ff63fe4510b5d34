"""Recompute finished tasks of a ``scripts/phase_flat_window.py`` store with the code as it is now
and compare every stored array bit for bit (timings excepted).

A store records the code version of ``stumplib.core`` and ``stumplib.phase`` it was made with, and
a resume under another version is refused. When the code changed in ways that should not touch the
numbers (documentation, argument checks), this script is the evidence: it reruns the named tasks
(cheap ones: small ``d``) with the store's own recorded parameters, one thread, and prints for each
which arrays differ. Exit status 0 when every named task reproduces, 1 otherwise. It never writes
the store.

Usage::

    python3 scripts/revalidate_flat_window.py scripts/PHASE_LOWEST_MINIMA.npz \\
        d500_seed0 d500_seed10 d2000_seed13

``scripts/PHASE_LOWEST_MINIMA.md`` records its one use.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from stumplib.sweep.cluster import pin_threads  # noqa: E402

if __name__ == "__main__":
    pin_threads()
import numpy as np  # noqa: E402


def compare(store: str, names: list[str]) -> dict[str, list[str]]:
    """Rerun each task of ``names`` (``d<d>_seed<s>``) and return the arrays that differ.

    Parameters
    ----------
    store : str
        The ``.npz`` store of ``scripts/phase_flat_window.py``.
    names : list of str
        Finished landscape tasks of the store's window.

    Returns
    -------
    dict
        ``{task: [names of differing arrays]}`` (an empty list: bit for bit the same).
    """
    import phase_flat_window as pfw
    from stumplib.core.version import code_version
    from stumplib.sweep.params import decode

    z = np.load(store)
    manifest = json.loads(str(z["manifest"]))
    p = decode(manifest["params"])
    print(f"recorded code version {p['code_version']}, now {code_version('core', 'phase', 'book/studies')}")
    out = {}
    for name in names:
        if manifest["tasks"].get(name, {}).get("status") != "done":
            raise SystemExit(f"{name}: not a finished task of {store}")
        d, s = name.removeprefix("d").split("_seed")
        t = time.time()
        r = pfw.landscape_task("window", int(d), int(s), p)
        differ = []
        for k in (k for k in z.files if k.startswith(name + "/")):
            if k.endswith("seconds"):  # timings
                continue
            a, b = z[k], np.asarray(r[k.split("/", 1)[1]])
            nan = a.dtype.kind in "fc"
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=nan):
                differ.append(k)
        print(f"{name}: {time.time() - t:.0f} s, differ: {', '.join(differ) or 'none'}")
        out[name] = differ
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("tasks", nargs="+")
    a = ap.parse_args(argv)
    return 0 if not any(compare(a.store, a.tasks).values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
