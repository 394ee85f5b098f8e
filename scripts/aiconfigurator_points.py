#!/usr/bin/env python3
"""Convert aiconfigurator's published silicon measurements into a kvcap points file (a held-out check).

ai-dynamo/aiconfigurator (Apache-2.0) publishes AIPerf closed-loop measurements of vLLM, SGLang and TensorRT-LLM
in aic-core/src/aiconfigurator_core/systems/silicon_sample.csv (mean TTFT and TPOT per point). The fixtures'
serving_measurements.json took its Llama 3.1 8B / 70B points from the same file; this script takes the aggregated
(non-disaggregated) points of *other* models that kvcap has built-in profiles for, on GPUs it has profiles for, in
layouts kvcap models, so that `kvcap accuracy --points` shows how the engine profiles fitted on Llama generalise.

    python3 scripts/aiconfigurator_points.py silicon_sample.csv COMMIT > bench/accuracy/aiconfigurator_holdout.json

Rows are kept in file order; a configuration measured twice (two collection dates) is kept once (the first), and of a
DeepSeek-V3 and a DeepSeek-R1 row with the same layout and numbers (one architecture, one measurement) the first is
kept.
"""
import csv
import json
import sys

MODELS = {  # aiconfigurator's model_path -> the Hugging Face id kvcap's accuracy maps to a built-in profile
    "Qwen/Qwen3-32B": "Qwen/Qwen3-32B",
    "Qwen/Qwen3-235B-A22B-FP8": "Qwen/Qwen3-235B-A22B-FP8",
    "openai/gpt-oss-120b": "openai/gpt-oss-120b",
    "deepseek-ai/DeepSeek-R1": "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-V3": "deepseek-ai/DeepSeek-V3",
}
GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200"}
ENGINES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def weight_dtype(row):
    q = row["gemm_quant_mode"]
    if row["model_path"] == "openai/gpt-oss-120b":
        return "mxfp4"  # the checkpoint's format; aiconfigurator labels it nvfp4 / fp8 by the kernels it times
    if q == "":
        return "bf16"
    if q in ("fp8", "fp8_block"):
        return "fp8"
    if q == "nvfp4":
        return "nvfp4"
    return None  # int4 weight-only and others: not modelled


MOE = {"Qwen/Qwen3-235B-A22B-FP8", "openai/gpt-oss-120b", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"}


def layout(row):
    """(tp, ep, attention_dp) in kvcap's points format, or None when kvcap does not model the layout.

    A MoE row's experts must cover the same GPUs as its attention: moe_tp x moe_ep = tp x attention_dp (a row with
    tp 2 and moe_tp 4 ran on 4 GPUs, which its tp alone does not say)."""
    def num(k):
        return int(row[k]) if row[k] else 0
    tp, pp, adp, mtp, ep = num("tp_size"), num("pp_size") or 1, num("attention_dp_size"), num("moe_tp_size"), num("moe_ep_size")
    if pp != 1:
        return None
    gpus = tp * max(adp, 1)
    if row["model_path"] in MOE and max(mtp, 1) * max(ep, 1) != gpus:
        return None
    if adp > 1:  # attention data-parallel: adp GPUs, each attending to its own requests, experts over all
        return (gpus, ep, True) if tp == 1 and ep == adp else None
    if tp > 8:
        return None  # multi-node layouts
    if ep > 1:
        return (tp, ep, False) if ep == tp else None  # experts over every GPU of the TP group
    return (tp, 0, False)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: aiconfigurator_points.py silicon_sample.csv COMMIT")
    path, commit = sys.argv[1], sys.argv[2]
    points, seen = [], set()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["mode"] != "agg" or row["model_path"] not in MODELS or row["system"] not in GPUS:
                continue
            wd, lay = weight_dtype(row), layout(row)
            if wd is None or lay is None or not row["silicon_ttft_ms"] or not row["silicon_tpot_ms"]:
                continue
            key = (row["backend"], row["backend_version"], row["model_path"], row["system"], wd, lay,
                   row["isl"], row["osl"], row["batch_size"])
            # DeepSeek-V3 and R1 share one architecture: a V3 row with an R1 row's numbers is the same measurement.
            same = (row["backend"], row["system"], wd, lay, row["isl"], row["osl"], row["batch_size"],
                    row["silicon_ttft_ms"], row["silicon_tpot_ms"])
            if key in seen or same in seen:
                continue
            seen.update((key, same))
            tp, ep, adp = lay
            c = int(row["batch_size"])
            points.append({
                "id": "AIC-%03d" % (len(points) + 1),
                "model_hf": MODELS[row["model_path"]],
                "gpu": GPUS[row["system"]],
                "tp": tp, "pp": 1, "ep": ep or None, "attention_dp": adp,
                "weight_dtype": wd, "kv_dtype": None,
                "engine": ENGINES[row["backend"]],
                "engine_version": row["backend_version"] or None,
                "kind": "serving",
                "batch_or_concurrency": c, "num_requests": 10 * c, "request_rate": None,
                "isl": int(row["isl"]), "osl": int(row["osl"]),
                "tpot_ms": round(float(row["silicon_tpot_ms"]), 3),
                "ttft_ms": round(float(row["silicon_ttft_ms"]), 3),
                "output_tok_s": None,
                "src": "github:ai-dynamo/aiconfigurator@%s:aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
                       " id=%s" % (commit, row["id"]),
                "note": "gemm_quant_mode=%s" % (row["gemm_quant_mode"] or "none"),
            })
    about = ("Held-out check of kvcap's engine profiles (fitted on Llama 3.1 8B / 70B): aggregated AIPerf "
             "measurements of other models from ai-dynamo/aiconfigurator's silicon_sample.csv (Apache-2.0), "
             "converted by scripts/aiconfigurator_points.py, in the format of shared/fixtures/serving_measurements.json "
             "plus ep, attention_dp and num_requests (see bench/accuracy/large_models.json). Every point is an AIPerf "
             "closed-loop concurrency run with fixed ISL/OSL, mean TPOT and TTFT (silicon_tpot_ms, silicon_ttft_ms); the "
             "rows do not give the request count: num_requests is 10 x concurrency, as for the fixtures' points from "
             "this file. note: the row's gemm_quant_mode. "
             "Run: kvcap accuracy --points bench/accuracy/aiconfigurator_holdout.json.")
    # One point per line: the file stays readable in a diff and about a third of its indented size.
    sys.stdout.write('{"about": %s,\n "points": [\n' % json.dumps(about))
    sys.stdout.write(",\n".join("  " + json.dumps(p) for p in points))
    sys.stdout.write("\n ]\n}\n")


if __name__ == "__main__":
    main()
