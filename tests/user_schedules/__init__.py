"""User schedules (``FILE.py:make_schedule``) of faults from public bug reports, and a correct
GEMM written with only one size parameter, for the tests of the check before launch, the
tolerance and crosscheck (``tests/test_launch_check.py``). Crashing kernels here are never
launched by the tests."""
