"""The heavy tiers on Ray: the full OpInfo sweep in resumable chunks, one Ray task (one CPU) each.

    tools/setup_ray_venv.sh                                          # .venv-ray: Ray over the project's .venv
    .venv-ray/bin/python3 -m tools.heavy opinfo --full --results /work/opinfo-sweep-X --out tests/opinfo/RESULTS.md
    .venv-ray/bin/python3 -m tools.heavy opinfo ... --address 10.0.0.5:6379    # an existing cluster (ray start)

chunks.py runs a chunk list on Ray (a local cluster by default, or the one at --address) and keeps each chunk's
result in the results directory as it completes; run again with the same directory, it resumes: completed
chunks are skipped. Every chunk records the commit it ran at, and a directory never mixes two. opinfo.py makes
the OpInfo sweep's chunk list and merges the chunks into the report tests/opinfo/sweep.py writes for a serial run.
"""
