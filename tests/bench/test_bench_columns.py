"""The benchmark's column table without running anything: which runner, program, thread count and CPUs each
column gets, which ratios the report draws, and that the model benchmark's scratch clean-up keeps the LLM
benchmark's export cache (it used to delete it, and ExecuTorch's LLM exports take about 20 minutes to remake)."""

import os

from bench import harness as H
from bench import report


def _env(tmp_path):
    env = H.Env(str(tmp_path), pin_cpu=0)
    env.ember_runners = {"ember": "/r/ember", "ember_portable": "/r/portable", "xnnpack": "/r/xnnpack"}
    env.et_runner = "/r/et"
    return env


def _threads(args):
    return int(args[args.index("--threads") + 1]) if "--threads" in args else 1


def test_every_column_has_a_runner_a_program_and_its_threads(tmp_path):
    env = _env(tmp_path)
    expect = {  # column -> (binary, threads)
        "ember": ("/r/ember", 1),
        "ember_portable": ("/r/portable", 1),
        "ember_2t": ("/r/ember", 2),
        "ember_xnnpack": ("/r/xnnpack", 1),
        "ember_xnnpack_2t": ("/r/xnnpack", 2),
        "et_portable": ("/r/et", 1),
        "et_xnnpack": ("/r/et", 1),
        "et_xnnpack_2t": ("/r/et", 2),
    }
    for fw, (binary, threads) in expect.items():
        args = H._runner_args(fw, env, str(tmp_path), "p.pte", 2, "out")
        assert args[0] == binary and args[1] == "p.pte", (fw, args)
        assert args.count("--input") == 2, (fw, args)
        assert _threads(args) == threads, (fw, args)
        # The ExecuTorch driver is always told its threadpool size; it would otherwise take the machine's.
        assert (binary != "/r/et") or "--threads" in args, (fw, args)
        assert H.env_for(env, fw).preexec() is not None, fw
    assert {H.program_of(fw) for fw in ("ember_xnnpack", "ember_xnnpack_2t", "et_xnnpack_2t")} == {"et_xnnpack"}
    assert H.program_of("ember_2t") == "ember" and H.program_of("et_portable") == "et_portable"
    # Every optional column is described (the report's framework table) and labelled (its tables and plot).
    for fw in H.OPTIONAL:
        assert fw in H.FRAMEWORKS and fw in report.LABELS, fw


def test_two_thread_columns_are_pinned_to_two_cpus(tmp_path):
    env = _env(tmp_path)
    if len(os.sched_getaffinity(0)) < 2:
        return  # one CPU: env_for pins what there is; nothing to compare
    env.pin_cpu = max(os.sched_getaffinity(0))
    for fw in ("ember_2t", "ember_xnnpack_2t", "et_xnnpack_2t"):
        assert H.env_for(env, fw).pin_cpus is not None and len(H.env_for(env, fw).pin_cpus) == 2, fw
    for fw in ("ember", "ember_xnnpack", "et_xnnpack"):
        assert H.env_for(env, fw).pin_cpu == env.pin_cpu and H.env_for(env, fw).pin_cpus is None, fw


def test_ratios_compare_like_thread_counts():
    fws = ["ember", "ember_2t", "ember_xnnpack", "ember_xnnpack_2t", "et_xnnpack", "et_xnnpack_2t", "eager"]
    pairs = report.ratio_pairs(fws)
    assert ("ember_xnnpack", "et_xnnpack") in pairs and ("ember_xnnpack_2t", "et_xnnpack_2t") in pairs
    assert ("ember_2t", "et_xnnpack_2t") in pairs and ("ember_2t", "ember") in pairs
    # The one-thread default build is never set against a two-thread peer.
    assert ("ember", "et_xnnpack_2t") not in pairs and ("ember", "et_xnnpack") in pairs


def test_model_benchmark_clean_up_keeps_the_llm_export_cache(tmp_path):
    cache = tmp_path / H.LLM_CACHE / "SmolLM-abc"
    cache.mkdir(parents=True)
    (cache / "fp32.pte").write_bytes(b"x")
    (tmp_path / "resnet18").mkdir()
    (tmp_path / "_stdout.txt").write_text("x")
    os.symlink(tmp_path / "resnet18", tmp_path / "link")
    H.clean_work(str(tmp_path), keep=(H.LLM_CACHE,))
    assert sorted(os.listdir(tmp_path)) == [H.LLM_CACHE]
    assert (cache / "fp32.pte").read_bytes() == b"x"
    H.clean_work(str(tmp_path / "fresh"))
    assert os.listdir(tmp_path / "fresh") == []


def test_litert_columns_are_pinned_like_their_threads_and_compared_alike(tmp_path):
    env = _env(tmp_path)
    assert [H.OPTIONAL[fw][2] for fw in H.LITERT] == [1, 2]
    assert {H.program_of(fw) for fw in H.LITERT} == {"litert"}
    env.litert_python = "/v/python3"
    for fw in H.LITERT:
        args = H._runner_args(fw, env, str(tmp_path), "m.tflite", 1, "out")
        assert args[:4] == ["/v/python3", "-m", "bench.litert_side", "measure"] and "m.tflite" in args, args
        assert _threads(args) == H.OPTIONAL[fw][2] and args[args.index("--output-dir") + 1] == "out", args
    if len(os.sched_getaffinity(0)) >= 2:
        env.pin_cpu = max(os.sched_getaffinity(0))
        assert H.env_for(env, "litert").pin_cpu == env.pin_cpu
        assert len(H.env_for(env, "litert_2t").pin_cpus) == 2
    pairs = report.ratio_pairs(["ember", "ember_2t", "litert", "litert_2t"])
    assert ("ember", "litert") in pairs and ("ember_2t", "litert_2t") in pairs
    assert ("ember", "litert_2t") not in pairs


def _result(models):
    """A result in the harness's shape: model -> framework -> median µs, or "convert" for a LiteRT conversion error."""
    out = {}
    for name, fws in models.items():
        entry = {}
        for fw, v in fws.items():
            entry[fw] = (
                {"error": "litert_torch.convert: boom", "conversion_failed": True}
                if v == "convert"
                else {"median_us": v}
            )
        out[name] = {"label": name, "frameworks": entry}
    return {"models": out, "frameworks": {fw: {} for fws in models.values() for fw in fws}}


def test_litert_goal_counts_converted_models_and_names_the_others():
    result = _result(
        {
            "resnet18": {"ember": 10.0, "litert": 12.0, "ember_2t": 6.0, "litert_2t": 5.0},
            "vit_tiny": {"ember": 10.0, "litert": "convert", "ember_2t": 6.0, "litert_2t": "convert"},
        }
    )
    one, two = (
        report.goal_litert(result, e, p, t) for e, p, t in (("ember", "litert", "1"), ("ember_2t", "litert_2t", "2"))
    )
    assert (one["holds"], one["measured"], one["expected"]) == (True, 1, 1), one
    assert (two["holds"], two["measured"], two["expected"]) == (False, 1, 1), two
    for gl in (one, two):
        assert "LiteRT could not convert: vit_tiny" in gl["evidence"], gl
    # Both rows are in the report's goals when the run asked for both columns.
    titles = [gl["goal"] for gl in report.goals(result)]
    assert sum("LiteRT" in t for t in titles) == 2, titles
