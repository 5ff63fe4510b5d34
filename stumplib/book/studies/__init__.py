"""The chapters' studies: the protocols that turn the science into a chapter's measurements.

The science packages (:mod:`stumplib.stump`, :mod:`stumplib.phase`, :mod:`stumplib.core`) hold
what a researcher imports into their own work: the models, their exact population quantities, the
trainers, solvers and minimisers. The modules here hold what one chapter does with them: grids per
profile (``smoke``, ``quick``, ``full``: the only place the profile names appear below the book),
the runs that feed a page and the numbers its tables and verdicts read. They depend on the science,
never the other way round, and import without the book's stack (no matplotlib, Sphinx or Jupyter),
so that the sweep scripts can run them on a cluster.

By chapter:

- chapter 3 (a finite corpus): :mod:`.certified` (the certified scale beta*(m, n) on each
  profile's grid, :data:`.certified.GRID`), :mod:`.transfer` (population to corpus),
  :mod:`.calibration` (the calibrated label score and its error);
- chapter 4 (the error bound): :mod:`.frozen` (the frozen estimator's error over ``(m, n, N)``),
  :mod:`.staged` (the staged runs that reach the certified scale);
- chapter 6 (the transition and its phase diagram): :mod:`.curves` (both branches, accurate and
  fixed-rule, the semantic branch's tail and fitted end), :mod:`.published` (the published curves,
  read from the package data of :mod:`stumplib.phase`, and the replay of the authors' procedure),
  :mod:`.diagram` (alpha_c(omega), alpha_l(omega)), :mod:`.decision` (two theories against
  minimisers extrapolated in ``1/d``);
- chapter 7 (the flat window and the global minimum): :mod:`.overlaps`, :mod:`.held_theta`,
  :mod:`.held_theory`, :mod:`.lowest_minima`, :mod:`.lowest_summary`, :mod:`.scaling_forms`.

Chapters 1, 2 and 5 call the science directly (:mod:`stumplib.stump`), with the book's table
rows and verdict sentences from :mod:`stumplib.book.sections`.
"""
