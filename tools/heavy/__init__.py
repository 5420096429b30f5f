"""The heavy tiers on Ray: the full OpInfo sweep, the full-size public zoo and fuzz campaigns in resumable chunks,
one Ray task (one CPU) each.

    tools/setup_ray_venv.sh                                          # .venv-ray: Ray over the project's .venv
    .venv-ray/bin/python3 -m tools.heavy opinfo --full --results /work/opinfo-sweep-X --out tests/opinfo/RESULTS.md
    .venv-ray/bin/python3 -m tools.heavy opinfo ... --address 10.0.0.5:6379    # an existing cluster (ray start)
    .venv-ray/bin/python3 -m tools.heavy zoo --size full --results /work/zoo-X --out zoo/public/STATUS_full.md
    .venv-ray/bin/python3 -m tools.heavy fuzz --runs 10000000 --results /work/fuzz-X [TARGET...]
                                             # writes fuzz-results/<date>-<commit>.md, as tools/fuzz.sh long does

chunks.py runs a chunk list on Ray (a local cluster by default, or the one at --address) and keeps each chunk's
result in the results directory as it completes; run again with the same directory, it resumes: completed
chunks are skipped. Every chunk records the commit it ran at, and a directory never mixes two. opinfo.py makes
the OpInfo sweep's chunk list and merges the chunks into the report tests/opinfo/sweep.py writes for a serial run;
zoo.py runs a model per chunk through zoo/public/check.py and writes zoo/public/status.py's report; fuzz.py splits
each target's executions into parts with their own seeds and writes tools/fuzz_results.py's table.
"""
