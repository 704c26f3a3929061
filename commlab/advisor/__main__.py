"""``python -m commlab.advisor [PATH]``: measure the convergence penalties again and write the table
(to the shipped ``penalties.csv`` unless PATH is given), with the time it took."""
import sys
import time

from .penalties import PATH, write

path = sys.argv[1] if len(sys.argv) > 1 else PATH
began = time.perf_counter()
table = write(path)
print(table.to_string())
print(f"wrote {path} in {time.perf_counter() - began:.0f} s")
