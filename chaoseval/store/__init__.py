"""The journal, what is kept beside it under ``<journal>.d/``, and how reports read it.

Reading a journal for a report (:func:`chaoseval.store.columns.read_trials`) is these steps, a
module each: the manifest line read lean (``manifest``); the lines decoded into the fields a
report uses (``lite``) one byte range front to back, or several ranges by forked readers at once
(``ranges``); the rows packed into numpy columns, re-run trials merged and what the pass could
not know read again by offset (``builder``); the rows checked against the manifest
(``conform``); the columns kept for the next command (``colcache``). ``columns`` runs them.

Why a forked reader and an ``.npz`` cache and not a columnar library (issue 47, measured by
``benchmarks/bench_readpaths.py`` of commit a83fb79, every path on the same journal in
one run, 2 cores shared with other work, load 11-17): no Parquet or Arrow reader makes these
columns (they are sums and codes of each line's trajectory), so a Parquet file could replace
only the cache, and as a cache it is slower and bigger than the ``.npz``. At 1M records (1.02M
trials, 2.9 GB): read warm from Parquet with pyarrow 10.1 s, 1.4 s CPU, 497 MB peak (pyarrow
itself adds 60-80 MB, measured on a 3 MB journal), from the ``.npz`` 3.3 s, 0.7 s CPU, 229 MB:
the Parquet path leaves nothing of the 500 MB target to the report. Cold, building the columns
costs the same either way (CPU ratio 0.97), the Parquet path peaking at 406 MB against 296 MB.
pyarrow's multi-threaded JSON reader, asked for the trial lines' top-level scalars alone, took
66.7 s and 1,512 MB. At 100k records the ratios hold (warm CPU 1.30, 192 against 89 MB). The
same run found that on this loaded 2-core machine the forked readers saved nothing over one pass
(CPU 0.91 at 1M, 0.95 at 100k; wall 115 s one pass, 132 s forked): whether ``ranges`` still
earns its place on an idle machine with more cores is for ``make bench-report`` there to say
(``CHAOSEVAL_READ_WORKERS=1`` reads in one pass).
"""
