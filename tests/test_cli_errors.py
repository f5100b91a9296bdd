"""Every bad input to the CLI ends in one line naming the problem and exit code 2, before any work is done and
without leaving files behind. Run in-process (each case through ``main``, as the console script calls it), with
a few through a real interpreter to see what a user sees."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import device
from gemmlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "results" / "h200"


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    """The CPU-only behaviour on any machine: gemmlab is told there is no GPU, so a GPU here skips no case."""
    monkeypatch.setattr(device, "probe", lambda: (None, "hidden from this test"))


@pytest.fixture
def files(tmp_path):
    """Files a user might hand to gemmlab by mistake."""
    made = {"other": {"a": 1}, "bare_list": [1, 2], "empty": {"records": []},
            "partial": {"env": {}, "records": [{"kernel": "cpu/blas"}]}}
    for name, content in made.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(content))
    (tmp_path / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (tmp_path / "afile").write_text("x")
    shutil.copy(H200 / "fp32.json", tmp_path / "h200.json")
    return tmp_path


# (arguments, words the one line must hold); {tmp} is a scratch folder with the files above
CASES = [
    # bench: every option checked before anything runs
    (["bench", "--shape", "12x"], "cannot read shape '12x'"),
    (["bench", "--shape", "0"], "every dimension must be at least 1"),
    (["bench", "--shape", "-5"], "cannot read shape '-5'"),
    (["bench", "--shape", "4096x4096"], "cannot read shape '4096x4096'"),
    (["bench", "--shape", "2.5"], "cannot read shape '2.5'"),
    (["bench", "--repeat", "0"], "--repeat: must be at least 1, got 0"),
    (["bench", "--repeat", "-5"], "--repeat: must be at least 1, got -5"),
    (["bench", "--repeat", "many"], "--repeat: 'many' is not a whole number"),
    (["bench", "--max-seconds", "0"], "--max-seconds: must be greater than 0"),
    (["bench", "--max-seconds", "-1"], "--max-seconds: must be greater than 0"),
    (["bench", "--max-seconds", "nan"], "--max-seconds: must be a finite number"),
    (["bench", "--max-seconds", "inf"], "--max-seconds: must be a finite number"),
    (["bench", "--blocks", "-1"], "--blocks: must be at least 0, got -1"),
    (["bench", "--block-seconds", "0"], "--block-seconds: must be greater than 0"),
    (["bench", "--pause", "-1"], "--pause: must be at least 0"),
    (["bench", "--seed", "-1"], "--seed: must be at least 0"),
    (["bench", "--gpu", "v100"], "no roofline data for GPU 'v100'"),
    (["bench", "--kernels", "nope*"], "no kernel matches 'nope*'"),
    (["bench", "--kernels", ","], "no kernel matches ','"),
    (["bench", "--kernels", "cpu/blas,cpu/v0_typo", "--shape", "8"], "no kernel matches 'cpu/v0_typo' (in "),
    (["bench", "--api", "--suite", "--kernels", "nope/*"], "--kernels: bench --api --suite times gemmlab.matmul"),
    (["bench", "--api", "--repeat", "5", "--layout", "row,col"], "--layout, --repeat: bench --api times"),
    (["list", "--kernels", "cuda/*,nope"], "no kernel matches 'nope' (in 'cuda/*,nope')"),
    (["bench", "--json", "/proc/forbidden/x.json"], "--json /proc/forbidden/x.json: cannot write in /proc"),
    (["bench", "--json", "/dev/null/x.json"], "/dev/null is not a directory"),
    (["bench", "--json", "{tmp}"], "is a directory; name a file"),
    (["bench", "--append"], "--append adds to the file named by --json"),
    (["bench", "--append", "--json", "{tmp}/other.json"], "--append: {tmp}/other.json: not a results JSON"),
    (["bench", "--append", "--json", str(H200 / "timeline.json")], "holds timeline results, not those of gemmlab bench"),
    (["bench", "--append", "--json", "{tmp}/h200.json"], "holds results from NVIDIA H200, this run is on no GPU"),
    (["bench", "--shape", "100000000000000000000"], "A, B and C take"),  # past the H200's memory at any precision
    (["bench", "--kernels", "cuda/tc4*", "--shape", "8000000"], "fp8: A, B and C take 238,418.6 GiB; NVIDIA H200"),
    (["bench", "--api"], "gemmlab bench --api needs a CUDA GPU"),
    (["bench", "--api", "--json", "/proc/forbidden/x.json"], "cannot write in /proc"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8"], "a variant is KERNEL:NAME=V[,NAME=V]"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8:BM"], "a variant is KERNEL:NAME=V[,NAME=V]"),
    (["bench", "--variant", ":BM=1"], "a variant is KERNEL:NAME=V[,NAME=V]"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8:BM=x"], "BM='x' is not an integer"),
    (["bench", "--variant", "cuda/v1_naive:BX=-1"], "BX=-1: a kernel's parameters are 0 or more"),
    (["bench", "--variant", "cuda/tc4_persistent_bf16:BM=128,BM=64"], "BM is set twice"),
    (["bench", "--variant", "cuda/v1_naive:BX=0"], "BX=0: a block has at least one thread along each side"),
    (["bench", "--variant", "numba/v1_naive:BY=0"], "BY=0: a block has at least one thread along each side"),
    (["bench", "--variant", "cuda/v2_smem:TILE=0"], "TILE=0: a tile is at least 1×1"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8:FOO=1"], "cuda/tc8_block_scaled_fp8 has no parameter FOO"),
    (["bench", "--variant", "cuda/tc5_swap_ab_tf32:A_IN_REGS=1,TF32_ROUND=3,TMA_ROUND=0"],
     "pass --layout row,col so that"),
    (["bench", "--variant", "cuda/tc5_swap_ab_tf32:A_IN_REGS=2,TF32_ROUND=3,TMA_ROUND=0", "--layout", "row,col"],
     "A_IN_REGS=2: 0"),
    (["bench", "--variant", "cuda/tc10_split_k_tf32:TF32_ROUND=2"], "TMA_ROUND=1: 0, or 1 for a TF32 build whose"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8:BN=256"], "192x256 tiles need 288960 bytes of shared memory"),
    (["bench", "--variant", "cuda/tc8_block_scaled_fp8:STAGES=4"], "STAGES=4 is what it has registered"),
    (["bench", "--variant", "cuda/nope:BM=1"], "no kernel named 'cuda/nope'"),
    (["bench", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required: command"),
    # verify
    (["verify", "--sample", "-1"], "--sample: must be at least 0"),
    (["verify", "--sample", "5000"], "--sample 5000: the sweep has 1728 combinations"),
    (["verify", "--kernels", "nope*"], "no kernel matches 'nope*'"),
    (["verify", "--json", "/proc/forbidden/x.json"], "cannot write in /proc"),
    # no kernel matches: one behaviour in every command
    (["list", "--kernels", "nope*"], "no kernel matches 'nope*'"),
    (["roofline", "--kernels", "nope*"], "no kernel matches 'nope*'"),
    (["roofline", "--kernels", "cpu/*"], "no GPU kernel matches 'cpu/*'"),
    (["roofline", "--gpu", "v100"], "no roofline data for GPU 'v100'"),
    (["roofline", "--measure"], "needs a CUDA GPU"),
    # past the device's memory: refused before any table is printed
    (["roofline", "--shape", "1000000"], "A, B and C take 11,175.9 GiB; NVIDIA H200 holds 141 GiB"),
    (["dispatch", "--shape", "1000000x1000000x1000000"], "fp16: A, B and C take 5,587.9 GiB; NVIDIA H200 holds"),
    (["dispatch", "--shape", "0"], "every dimension must be at least 1"),
    (["profile", "nope*"], "no kernel matches 'nope*'"),
    (["timeline", "--kernels", "nope*"], "no kernel matches 'nope*'"),
    (["timeline", "--kernels", "cuda/tc5_swap_ab_tf32"], "this one has none"),
    (["timeline", "--launches", "0"], "--launches: must be at least 1"),
    (["timeline"], "needs a CUDA GPU"),
    (["tune"], "needs a CUDA GPU"),
    # report: every kind of wrong file, and wrong places to write
    (["report", "{tmp}/nonexistent.json", "--out", "{tmp}/out"], "nonexistent.json: no such file"),
    (["report", str(ROOT / "README.md"), "--summary"], "README.md: not JSON"),
    (["report", str(ROOT / "pyproject.toml"), "--out", "{tmp}/out"], "pyproject.toml: not JSON"),
    (["report", str(H200), "--summary"], "is a directory, not a results JSON"),
    (["report", "{tmp}/binary.json", "--summary"], "not text, so not a results JSON"),
    (["report", "{tmp}/other.json", "--summary"], "not a results JSON that gemmlab writes"),
    (["report", "/dev/zero", "--summary"], "/dev/zero: not a regular file (a device or a pipe)"),
    (["chapter", "--from", "/dev/zero"], "/dev/zero: not a regular file (a device or a pipe)"),
    (["chapter", "--from", str(H200)], "is a directory, not a results JSON"),
    (["chapter", "--cpu-shape", "100000000x100000000x100000000"],
     "--cpu-shape 100000000x100000000x100000000: cpu/v0_naive does not run it"),
    (["bench", "--distributed"], "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set; start each rank under torchrun"),
    # an option without the one that uses it: refused, not ignored
    (["bench", "--precision", "bf16"], "--precision goes with --api, which is not given"),
    (["bench", "--block-seconds", "1"], "--block-seconds goes with --blocks"),
    (["roofline", "--json", "{tmp}/c.json"], "--json goes with --measure"),
    (["dispatch", "--out", "{tmp}/t.json"], "--out goes with --build, --write, --split-k or --held-out"),
    # an option that the mode given does not read: refused, not ignored
    (["roofline", "--remodel", "{tmp}/h200.json", "--kernels", "cuda/v1*"],
     "--kernels: not read by roofline --remodel, which rewrites the models of saved records; alone it would be"),
    (["roofline", "--remodel", "{tmp}/h200.json", "--check", "{tmp}/h200.json"], "--check: not allowed with argument"),
    (["roofline", "--check", "{tmp}/h200.json", "--shape", "512", "--gpu", "h100"],
     "--shape, --gpu: not read by roofline --check, which checks saved records against their own models; alone they"),
    (["roofline", "--measure", "--ceilings", "{tmp}/h200.json"], "--ceilings: not read by roofline --measure, which"),
    (["dispatch", "--held-out", "--layout", "row,col"], "--layout: not read by dispatch --held-out, which checks"),
    (["dispatch", "--held-out", "--b-transposed", "--shape", "512"], "--shape, --b-transposed: not read by dispatch"),
    (["dispatch", "--build", "{tmp}/h200.json", "--precision", "bf16", "--out", "{tmp}/t.json"],
     "--precision: not read by dispatch --build, which writes a table"),
    (["dispatch", "--split-k", "{tmp}/h200.json", "--shape", "512"], "--shape: not read by dispatch --split-k"),
    (["report", "{tmp}/bare_list.json", "--summary"], "its records are not those of gemmlab"),
    (["report", "{tmp}/empty.json", "--out", "{tmp}/out"], "holds no records"),
    (["report", "{tmp}/partial.json", "--out", "{tmp}/out"], "its records are not those of gemmlab"),
    (["report", str(H200 / "fp32.json"), "--out", "/dev/null/x"], "--out /dev/null/x: /dev/null is not a directory"),
    (["report", str(H200 / "fp32.json"), "--out", "{tmp}/afile"], "a file is there, not a directory"),
    (["report", str(H200 / "fp32.json")], "one of the arguments --out --summary is required"),
    (["report", str(H200 / "fp32.json"), "--out", "{tmp}/out", "--summary"], "not allowed with argument --out"),
    # profile: refused before ncu, with nothing left behind
    (["profile", "cpu/blas"], "cpu/blas: runs on the CPU"),
    (["profile", "cuda/v1_naive"], "gemmlab profile needs a CUDA GPU"),
    (["profile", "cuda/v1_naive", "--json", "{tmp}/missing.json"], "--json: {tmp}/missing.json: no such file"),
    (["profile", "cuda/v1_naive", "--json", "{tmp}/h200.json"], "gemmlab profile needs a CUDA GPU"),
    (["profile", "cuda/v1_naive", "--shape", "0"], "every dimension must be at least 1"),
]


def _run(args, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors leave through its exit()
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("args,words", CASES, ids=[" ".join(a) or "(nothing)" for a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(args, words, files, capsys):
    before = sorted(p.name for p in files.iterdir())
    code, out = _run([a.replace("{tmp}", str(files)) for a in args], capsys)
    lines = out.splitlines()
    assert code == 2, out
    assert len(lines) == 1, out
    assert "Traceback" not in out and "error: " in lines[0]
    assert words.replace("{tmp}", str(files)) in lines[0]
    assert sorted(p.name for p in files.iterdir()) == before  # no report folder, no results.ncu/, no JSON


@pytest.mark.parametrize("columns", ["", "0"])
@pytest.mark.parametrize("args", [["bench", "--repeat", "0"], ["report", "nonexistent.json", "--summary"],
                                  ["bench", "--kernels", "nope*"], ["list", "--kernels", "nope*"],
                                  ["verify", "--kernels", "cpu/blas", "--sample", "-1"]])
def test_a_real_process_says_the_same_one_line(args, columns, tmp_path):
    """Through a real interpreter, also with COLUMNS=0 (a terminal of no width, where a rich console prints
    nothing): the line is there."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               CUDA_VISIBLE_DEVICES="", COLUMNS=columns)  # what a machine without a GPU sees, on one with
    proc = subprocess.run([sys.executable, "-m", "gemmlab", *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert proc.stdout == "" and len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"gemmlab {args[0]}: error: ")


def test_a_failure_no_check_foresaw_is_one_line_too(monkeypatch, capsys):
    """An exception no command turned into a GemmlabError (here a KeyError from inside `list`) ends in one line
    naming its type and message, exit 2; GEMMLAB_TRACEBACK=1 lets it through with its traceback."""
    from gemmlab import cli

    def broken(args):
        raise KeyError("a key no table has")

    monkeypatch.setitem(cli.COMMANDS, "list", broken)
    assert main(["list"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemmlab list: error: KeyError: 'a key no table has'")
    monkeypatch.setenv("GEMMLAB_TRACEBACK", "1")
    with pytest.raises(KeyError):
        main(["list"])


def test_version_and_a_help_that_names_every_command(capsys):
    from gemmlab import __version__
    from gemmlab.cli import build_parser

    assert _run(["--version"], capsys) == (0, f"gemmlab {__version__}\n")
    code, text = _run(["--help"], capsys)
    summary = " ".join(text.split("positional arguments")[0].split())  # the description, unwrapped
    commands = build_parser()._subparsers._group_actions[0].choices
    assert code == 0 and all(f" {name} " in summary or f" {name}." in summary for name in commands), summary


def test_an_interrupted_bench_writes_what_it_finished(tmp_path, capsys, monkeypatch):
    """Ctrl-C after the CPU table: the JSON holds those records, marked partial, and reads back as a bench file."""
    from gemmlab import console
    from gemmlab.results import load_results

    step = console.BenchPrinter.step

    def interrupt_at_the_gpu_kernels(self, label, *rest):
        if label.startswith("cuda/"):
            raise KeyboardInterrupt
        return step(self, label, *rest)

    monkeypatch.setattr(console.BenchPrinter, "step", interrupt_at_the_gpu_kernels)
    out = tmp_path / "r.json"
    code, text = _run(["bench", "--kernels", "cpu/*,cuda/v1_naive", "--shape", "32", "--repeat", "3", "--json",
                       str(out)], capsys)
    assert code == 130 and "interrupted: wrote the 2 records finished so far" in text
    results = load_results(out)
    assert results["partial"].startswith("interrupted") and results["env"]["command"].startswith("gemmlab bench")
    assert sorted(r["kernel"] for r in results["records"]) == ["cpu/blas", "cpu/v0_naive"]



# an empty value is refused where argparse reads it: as absent it would run everything (bench --json '' wrote no
# JSON, list --kernels '' listed every kernel), as a path the current directory (report --out ''); (arguments, the
# argument named)
FP32 = str(H200 / "fp32.json")
EMPTY = [(["list", "--kernels", ""], "--kernels"), (["bench", "--kernels", ""], "--kernels"),
         (["bench", "--json", ""], "--json"), (["bench", "--json", " "], "--json"),
         (["verify", "--kernels", ""], "--kernels"), (["verify", "--json", ""], "--json"),
         (["roofline", "--kernels", ""], "--kernels"), (["roofline", "--measure", "--json", ""], "--json"),
         (["roofline", "--ceilings", ""], "--ceilings"), (["roofline", "--remodel", ""], "--remodel"),
         (["roofline", "--check", FP32, ""], "--check"), (["report", "", "--summary"], "results"),
         (["report", FP32, "--out", ""], "--out"), (["profile", ""], "kernel"),
         (["profile", "cuda/v1_naive", "--json", ""], "--json"), (["timeline", "--kernels", ""], "--kernels"),
         (["timeline", "--json", ""], "--json"), (["accuracy", "--json", ""], "--json"),
         (["dispatch", "--build", ""], "--build"), (["dispatch", "--build", FP32, ""], "--build"),
         (["dispatch", "--write", ""], "--write"), (["dispatch", "--split-k", ""], "--split-k"),
         (["dispatch", "--held-out", "--out", ""], "--out"), (["chapter", "--json", ""], "--json"),
         (["chapter", "--from", ""], "--from"), (["chapter", "--docs", ""], "--docs"),
         (["tune", "--kernels", ""], "--kernels")]


@pytest.mark.parametrize("args,option", EMPTY, ids=[" ".join(a) for a, _ in EMPTY])
def test_an_empty_value_is_refused_by_the_parser(args, option, capsys):
    """Refused in parsing, before any command runs (so bench and verify are never started here): one line naming the
    argument, exit 2."""
    from gemmlab.cli_parser import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(args)
    lines = capsys.readouterr().err.splitlines()
    assert exc.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"gemmlab {args[0]}: error: argument {option}") and " is empty" in lines[0], lines[0]


@pytest.mark.parametrize("args", [["list", "--kernels", ""], ["report", FP32, "--out", ""],
                                  ["dispatch", "--held-out", "--out", ""]], ids=lambda a: " ".join(a))
def test_an_empty_value_selects_and_writes_nothing(args, tmp_path, monkeypatch, capsys):
    """Through main, from an empty folder: one line, exit 2, nothing printed before it and nothing written there
    (report --out '' wrote its report into the current directory)."""
    monkeypatch.chdir(tmp_path)
    code, out = _run(args, capsys)
    assert code == 2 and len(out.splitlines()) == 1 and " is empty" in out, out
    assert list(tmp_path.iterdir()) == []


SHIPPED_FROM = [H200 / f for f in ("fp32.json", "tensor_cores.json", "fp8.json", "split_k.json")] + \
    sorted(H200.glob("grid_*.json"))  # what the shipped dispatch table is built of (results/h200/run.sh)


@pytest.fixture
def shipped_copies(tmp_path, monkeypatch):
    """The shipped dispatch and split-K tables as copies in tmp_path, which --build and --split-k write without
    --out: the checkout's own are never written here, whatever the command does."""
    from gemmlab import dispatch
    from gemmlab.kernels.cuda.tc.model import split_k

    table, measured = tmp_path / "dispatch-h200.json", tmp_path / "split_k-h200.json"
    table.write_text(dispatch.SHIPPED.read_text())
    measured.write_text(split_k.MEASURED.read_text())
    monkeypatch.setattr(dispatch, "SHIPPED", table)
    monkeypatch.setattr(split_k, "MEASURED", measured)
    dispatch.load_table.cache_clear()
    yield table, measured
    dispatch.load_table.cache_clear()


@pytest.mark.parametrize("flag, some, lost, every, which, held", [
    ("--build", [H200 / "fp32.json"], "NVIDIA H200 bf16, fp8, fp8_block, tf32", SHIPPED_FROM, 0,
     lambda t: set(t["NVIDIA H200"])),
    ("--split-k", [H200 / "tc10_sweep_bf16.json"], "fp8, fp8_block, tf32", sorted(H200.glob("tc10_sweep_*.json")), 1,
     lambda t: set(t["choices"]))])
def test_the_shipped_tables_are_not_replaced_by_runs_of_some_of_their_precisions(shipped_copies, capsys, flag, some,
                                                                                   lost, every, which, held):
    """--build (or --split-k) without --out from FP32's results (BF16's sweep) alone wrote the shipped dispatch
    (split-K) table of that precision alone, every other dropped: refused in one line naming what it would lose, the
    table untouched; the full set still writes it, holding every precision it held."""
    table = shipped_copies[which]
    before = table.read_bytes()
    code, out = _run(["dispatch", flag, *map(str, some)], capsys)
    assert code == 2 and len(out.splitlines()) == 1, out
    assert lost in out and "--out" in out, out
    assert table.read_bytes() == before
    code, out = _run(["dispatch", flag, *map(str, every)], capsys)
    assert code == 0 and f"wrote {table}" in out, out
    assert held(json.loads(table.read_text())) == held(json.loads(before))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a file every write to fails")
def test_a_results_file_that_cannot_be_written_after_the_run_is_one_line(capsys):
    """--json passed the check before the work (appending nothing to /dev/full succeeds), and the write after it
    fails: the error names the file and why, on one line of stderr, exit 2."""
    code = main(["bench", "--kernels", "cpu/blas", "--shape", "8", "--json", "/dev/full"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0] == "gemmlab bench: error: /dev/full: could not be written (No space left on device)"
