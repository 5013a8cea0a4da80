"""``python -m tiletraffic``: the command line (same as the ``tiletraffic`` script)."""
from tiletraffic.analysis.cli import main

if __name__ == "__main__":
    main(prog_name="tiletraffic")
