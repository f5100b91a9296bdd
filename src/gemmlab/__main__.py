"""`gemmlab` and `python -m gemmlab`: the command line (gemmlab.cli), and a broken install said in one line. The
command line's modules import their dependencies (rich among them) before any of its error handling can run: where
one is missing or fails to import, the command ends in that one line and exit 2, not a traceback."""
import sys


def run() -> int:
    try:
        from gemmlab.cli import main
    except ImportError as exc:
        print(f"gemmlab: error: {exc}: a dependency of gemmlab is missing or broken; reinstall it "
              "(python3 -m pip install -e .)", file=sys.stderr)
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(run())
