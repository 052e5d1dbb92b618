"""dgbench: the daxguard benchmark harness (see bench/README.md).

One module per job: systems (set up / tear down each filesystem), workloads
(what is run on a mounted system), fio / parsers (turn tool output into
numbers), stats (medians, spreads, ratios), report (JSON and Markdown),
plots (PNG), machine (facts recorded with the results), cli (bench/run.py).
"""
