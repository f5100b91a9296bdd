"""This folder on sys.path (pytest's prepend import mode puts a conftest's folder there), so that the tests in tc/
reuse test_plans' stub driver and host GPU, whichever test file runs first."""
