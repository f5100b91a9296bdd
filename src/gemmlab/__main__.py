"""`gemmlab` and `python -m gemmlab`: the command line (gemmlab.cli), and a broken install said in one line. The
command line's modules import their dependencies (rich among them) before any of its error handling can run: where
one is missing, or fails as it imports with any error (a NumPy built for another ABI, a library that will not load,
a warning turned into an error), the command ends in that one line and exit 2, not a traceback."""
import sys


def run() -> int:
    try:
        from gemmlab.cli import main
    except Exception as exc:  # noqa: BLE001 - nothing of gemmlab has run yet: whatever failed is the install's
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not isinstance(exc, ImportError):
            what = f"{type(exc).__name__}: {what}"
        print(f"gemmlab: error: {what}: a dependency of gemmlab is missing or broken; reinstall it "
              "(python3 -m pip install -e .)", file=sys.stderr)
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(run())
