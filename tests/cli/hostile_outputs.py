#!/usr/bin/env python3
"""Hostile names through every reporter (issue 13, "escaping at every output").

Usage: hostile_outputs.py CASE KVCAP REPO_ROOT [KVCAP_PLOT]

Writes profiles whose names carry CSV separators and quotes, spreadsheet formulas, XML markup, newlines,
terminal escapes and GitHub workflow commands, runs kvcap on them and checks the output with standard parsers
(csv, xml.etree): columns stay put, formulas are neutralised, XML is well-formed, no line of human-readable
output starts with a workflow command and no ESC byte reaches the terminal.
"""
import csv
import io
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CSV_NAME = 'a,b"c'
FORMULA = "=cmd|' /C calc'!A0"
# YAML double-quoted: \n newline, \e ESC.
EVIL_YAML = r'evil\n::error file=/etc/passwd::owned \e[31mred\e[0m'
EVIL = "evil\n::error file=/etc/passwd::owned \x1b[31mred\x1b[0m"
SCRIPT = '<script>alert(1)</script> & "x"'


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, expect_rc=None):
    p = subprocess.run(args, capture_output=True)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if expect_rc is not None and p.returncode != expect_rc:
        fail(f"{args}: exit {p.returncode}, expected {expect_rc}\n{out}{err}")
    return p.returncode, out, err


def model_yaml(root, tmp, file, name, display):
    text = open(os.path.join(root, "profiles/models/llama-3.1-8b.yaml")).read()
    text = text.replace('name: "llama-3.1-8b"', f'name: "{name}"', 1)
    text = text.replace('display_name: "Meta Llama 3.1 8B"', f'display_name: "{display}"', 1)
    path = os.path.join(tmp, file)
    open(path, "w").write(text)
    return path


def yaml_dq(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')


def human_safe(text, what):
    if "\x1b" in text:
        fail(f"{what}: a raw ESC reached the terminal:\n{text!r}")
    for line in text.splitlines():
        if line.startswith("::"):
            fail(f"{what}: a line starts with a workflow command: {line!r}")


def case_compare_csv(kvcap, root, tmp, _plot):
    a = model_yaml(root, tmp, "a.yaml", yaml_dq(CSV_NAME), "A")
    b = model_yaml(root, tmp, "b.yaml", yaml_dq(FORMULA), "B")
    _, out, _ = run([kvcap, "compare", "--deploy", f"{a}@h100-sxm", "--deploy", f"{b}@h100-sxm", "--contexts", "4K",
                     "--format", "csv"], 0)
    rows = list(csv.reader(io.StringIO(out)))
    if any(len(r) != len(rows[0]) for r in rows):
        fail(f"columns shifted:\n{out}")
    models = [r[1] for r in rows[1:]]
    if models != [CSV_NAME, "'" + FORMULA]:
        fail(f"model column {models!r}, expected {[CSV_NAME, chr(39) + FORMULA]!r}")


def case_sweep_csv(kvcap, root, tmp, _plot):
    b = model_yaml(root, tmp, "b.yaml", yaml_dq(FORMULA), "B")
    _, out, _ = run([kvcap, "sweep", "--models", b, "--gpus", "h100-sxm", "--contexts", "4K", "--batches", "1"], 0)
    rows = list(csv.reader(io.StringIO(out)))
    if len(rows) != 2 or len(rows[1]) != len(rows[0]):
        fail(f"sweep CSV shape:\n{out}")
    if rows[1][0] != "'" + FORMULA:
        fail(f"formula not neutralised: {rows[1][0]!r}")


def case_sweep_grid_cap(kvcap, _root, _tmp, _plot):
    many = ",".join(str(i) for i in range(1, 10002))  # 2 x 1 x 10001 x 10001 > 10^8 points
    rc, out, err = run([kvcap, "sweep", "--models", "llama-3.1-8b,llama-3.1-70b", "--gpus", "h100-sxm",
                        "--contexts", many, "--batches", many], 2)
    if "the grid has 200040002 points" not in err or out:
        fail(f"expected a refusal with the estimate and no output:\n{out[:500]}{err}")


def case_size_csv(kvcap, root, tmp, _plot):
    gpu = open(os.path.join(root, "profiles/gpus/h100-sxm.yaml")).read()
    gpu = gpu.replace("name: h100-sxm", f'name: "{yaml_dq(FORMULA + CSV_NAME)}"', 1)
    gpath = os.path.join(tmp, "gpu.yaml")
    open(gpath, "w").write(gpu)
    _, out, _ = run([kvcap, "size", "--model", "llama-3.1-8b", "--prompt-tokens", "1K", "--output-tokens", "128",
                     "--rate", "5", "--ttft-p", "1s", "--tpot", "50ms", "--gpus", gpath, "--max-pp", "1",
                     "--format", "csv", "--top", "1"], 0)
    rows = list(csv.reader(io.StringIO(out)))
    if any(len(r) != len(rows[0]) for r in rows) or len(rows) < 2:
        fail(f"size CSV columns shifted:\n{out}")
    if rows[1][1] != "'" + FORMULA + CSV_NAME:
        fail(f"gpu column {rows[1][1]!r}")
    _, out, err = run([kvcap, "size", "--model", "llama-3.1-8b", "--prompt-tokens", "1K", "--output-tokens", "128",
                       "--rate", "5", "--ttft-p", "1s", "--tpot", "50ms", "--gpus", gpath, "--max-pp", "1"], 0)
    human_safe(out + err, "kvcap size")


def case_plan_table(kvcap, root, tmp, _plot):
    m = model_yaml(root, tmp, "evil.yaml", "evil-model", EVIL_YAML)
    _, out, err = run([kvcap, "plan", "--model", m, "--gpu", "h100-sxm", "--contexts", "4K"], 0)
    human_safe(out + err, "kvcap plan")
    if "evil\\n\\::error" not in out and "evil\\n::error" not in out:
        fail(f"the escaped name is not shown:\n{out}")


def requirements(root, tmp):
    m = model_yaml(root, tmp, "evil.yaml", "evil-model", EVIL_YAML)
    path = os.path.join(tmp, "req.yaml")
    open(path, "w").write(f"""kind: requirements
name: "{EVIL_YAML}"
promises:
  - name: "{EVIL_YAML}"
    deployment: {{model: {m}, gpu: h100-sxm, max_model_len: 8K}}
    metric: concurrency_at
    context_tokens: 8K
    at_least: 1000000
  - name: "{yaml_dq(SCRIPT)}"
    deployment: {{model: {m}, gpu: h100-sxm, max_model_len: 8K}}
    metric: fits
""")
    return path


def case_check_table(kvcap, root, tmp, _plot):
    _, out, err = run([kvcap, "check", requirements(root, tmp)], 1)
    human_safe(out + err, "kvcap check")


def case_check_github(kvcap, root, tmp, _plot):
    _, out, _ = run([kvcap, "check", requirements(root, tmp), "--format", "github"], 1)
    commands = [line for line in out.splitlines() if line.startswith("::")]
    if len(commands) != 1 or not commands[0].startswith("::error file="):
        fail(f"expected one ::error annotation (one broken promise):\n{out}")
    if "evil%0A%3A%3Aerror" not in commands[0] or "\x1b" in out:
        fail(f"the promise name is not escaped as workflow-command data:\n{out}")
    if ",line=" not in commands[0]:
        fail(f"the annotation has no line:\n{out}")


def case_check_junit(kvcap, root, tmp, _plot):
    xml = os.path.join(tmp, "junit.xml")
    run([kvcap, "check", requirements(root, tmp), "--junit", xml], 1)
    names = [c.get("name") for c in ET.parse(xml).getroot().iter("testcase")]
    if SCRIPT not in names or not any(n.startswith("evil\n::error") for n in names):
        fail(f"testcase names do not round-trip: {names!r}")


def case_validate_text(kvcap, root, tmp, _plot):
    path = os.path.join(tmp, "bad.yaml")
    open(path, "w").write(f'kind: gpu\nname: x\n"{EVIL_YAML}": 1\n')
    _, out, err = run([kvcap, "validate", path], 1)
    human_safe(out + err, "kvcap validate")
    _, out, _ = run([kvcap, "validate", path, "--format", "github"], 1)
    if len([line for line in out.splitlines() if line.startswith("::")]) != sum(
            1 for line in out.splitlines() if line.startswith("::error file=")):
        fail(f"validate --format github: an injected command:\n{out}")


def case_plot_svg(_kvcap, root, tmp, plot):
    gpu = open(os.path.join(root, "profiles/gpus/h100-sxm.yaml")).read()
    gpu = gpu.replace('display_name: "NVIDIA H100 SXM5 80GB"', f'display_name: "{yaml_dq(SCRIPT)}"', 1)
    gpath = os.path.join(tmp, "gpu.yaml")
    open(gpath, "w").write(gpu)
    for title, expect in ((SCRIPT, SCRIPT), (None, None)):
        svg = os.path.join(tmp, "chart.svg")
        args = [plot, "--models", "llama-3.1-8b", "--gpu", gpath, "--out", svg, "--size", "400x300"]
        if title:
            args += ["--title", title]
        run(args, 0)
        try:
            tree = ET.parse(svg)
        except ET.ParseError as e:
            fail(f"{svg} is not well-formed XML ({e}); title {title!r}")
        ns = "{http://www.w3.org/2000/svg}"
        if list(tree.getroot().iter(ns + "script")) or list(tree.getroot().iter("script")):
            fail("the SVG carries a <script> element")
        t = tree.getroot().find(ns + "title")
        if expect is not None and (t is None or t.text != expect):
            fail(f"<title> is {None if t is None else t.text!r}, expected {expect!r}")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    name, kvcap, repo = sys.argv[1], sys.argv[2], sys.argv[3]
    plot = sys.argv[4] if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory() as tmp:
        CASES[name](kvcap, repo, tmp, plot)
    print("ok:", name)
