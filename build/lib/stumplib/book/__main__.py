"""The book's maintenance commands: ``python -m stumplib.book prune [--dry-run]`` and
``python -m stumplib.book compare A B``."""
from __future__ import annotations

from typing import Sequence

from stumplib.book.cache import prune_results, results_dir
from stumplib.book.compare import compare_claims, load_claims


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m stumplib.book prune [--dry-run]``: delete the results files of other code versions
    (see :func:`prune_results`) and list them. ``python -m stumplib.book compare A B``: the
    claims whose status changed or whose estimate moved beyond its interval between two builds
    (``A``, ``B``: ``claims.json`` files or built site folders; :func:`compare_claims`).

    Parameters
    ----------
    argv : the command-line arguments (``None``: ``sys.argv[1:]``).

    Returns
    -------
    int : the exit status.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m stumplib.book",
                                     description="Maintenance of the results cache; comparison "
                                                 "of two builds' claims.")
    sub = parser.add_subparsers(dest="command", required=True)
    prune = sub.add_parser("prune", help="delete results files made by other versions of stumplib")
    prune.add_argument("--dry-run", action="store_true", help="only list them")
    comp = sub.add_parser("compare", help="claims whose status or estimate changed between builds")
    comp.add_argument("a", help="claims.json of the first build, or its site folder")
    comp.add_argument("b", help="claims.json of the second build, or its site folder")
    args = parser.parse_args(argv)
    if args.command == "compare":
        changed = compare_claims(load_claims(args.a), load_claims(args.b))
        for line in changed:
            print(line)
        print(f"{len(changed)} of {len(load_claims(args.b))} claims changed" if changed
              else "no claim changed its status or moved its estimate beyond its interval")
        return 0
    gone = prune_results(dry_run=args.dry_run)
    size = sum(p.stat().st_size for p in gone if p.exists()) if args.dry_run else None
    for p in gone:
        print(p)
    verb = "would delete" if args.dry_run else "deleted"
    extra = f" ({size / 1e6:.1f} MB)" if size is not None else ""
    print(f"{verb} {len(gone)} files under {results_dir()}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
