"""Shared by every kernel test below this folder: hostsim's session fixture (host builds of the CUDA sources), and
this folder on sys.path (pytest's prepend import mode puts a conftest's folder there), so that the tests in
cuda/sgemm/ and cuda/tc/ import hostsim."""
from hostsim import host_builds  # noqa: F401
